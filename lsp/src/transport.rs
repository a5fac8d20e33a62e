//! The wire between the editor and [`tower_lsp_server::Server`], with a guard.
//!
//! tower-lsp-server's reader stops for good at the first frame it cannot
//! decode (tokio-util ends a framed stream after a decoder error), so one
//! malformed message from a client would silently end the session. The guard
//! reads frames itself, forwards only those that are JSON-RPC messages, and
//! answers the others with the JSON-RPC error the specification asks for
//! (`-32700` parse error, `-32600` invalid request), through an output mux
//! that interleaves whole frames with the server's own.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Request, Response};
use tower_lsp_server::Server;

use crate::Config;

/// The largest frame the guard reads into memory (a document that large is
/// not one an editor can edit anyway; the server's own limit is lower).
pub const MAX_FRAME: usize = 256 * 1024 * 1024;

/// Frame one JSON-RPC message body.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Answers the server wrote as JSON itself, each standing in a response as
/// a one-symbol outline whose name is [`Spliced::keep`]'s, until the output
/// writes the answer in its place.
///
/// tower-lsp-server turns every result into a `serde_json::Value` tree
/// before writing it: for the outline of a 100,000-task model that tree is
/// about a gigabyte of small maps (each symbol's ranges are five of them)
/// and most of the request's time. The outline is written straight from
/// its typed value instead, and only a stand-in passes through the library,
/// which keeps its order, cancellation and lifecycle. A stand-in's name
/// begins with a NUL character, which no XML document can hold, so no
/// model's outline is ever mistaken for one.
#[derive(Debug, Clone, Default)]
pub struct Spliced(Arc<Mutex<Kept>>);

#[derive(Debug, Default)]
struct Kept {
    next: u64,
    /// The latest answers (tower-lsp-server runs at most four requests at
    /// once; an answer whose request was cancelled ages out).
    answers: VecDeque<(u64, Vec<u8>)>,
}

/// How many answers are kept before the oldest is dropped.
const KEPT: usize = 16;
/// What begins a stand-in's name, and the same as JSON writes it.
const MARK: &str = "\u{0}qflow-spliced:";
const MARK_JSON: &[u8] = b"\"\\u0000qflow-spliced:";

impl Spliced {
    /// Keep `json`, a whole result, and return the name that stands for it.
    pub fn keep(&self, json: Vec<u8>) -> String {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.next += 1;
        let n = kept.next;
        if kept.answers.len() == KEPT {
            kept.answers.pop_front();
        }
        kept.answers.push_back((n, json));
        format!("{MARK}{n}")
    }

    /// If `body` is a response standing in for a kept answer: its id and
    /// the answer (which is no longer kept).
    fn claim(&self, body: &[u8]) -> Option<(Value, Vec<u8>)> {
        // A stand-in is a few hundred bytes; look no further in larger frames.
        if body.len() > 4096 || !body.windows(MARK_JSON.len()).any(|w| w == MARK_JSON) {
            return None;
        }
        let v: Value = serde_json::from_slice(body).ok()?;
        let n: u64 = v["result"][0]["name"]
            .as_str()?
            .strip_prefix(MARK)?
            .parse()
            .ok()?;
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let at = kept.answers.iter().position(|(k, _)| *k == n)?;
        let (_, json) = kept.answers.remove(at)?;
        Some((v["id"].clone(), json))
    }
}

/// A frame the guard does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Headers that make no sense: the body, if any, cannot be located.
    Header(String),
    /// A length over [`MAX_FRAME`]: never allocated, skipped as it streams.
    TooLarge(usize),
}

/// Read one frame's body. `Ok(None)`: end of input; `Ok(Some(Err))`: a frame
/// whose headers make no sense (its body, if any, cannot be located).
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    r: &mut R,
) -> std::io::Result<Option<Result<Vec<u8>, Refused>>> {
    let mut length: Option<Result<usize, String>> = None;
    let mut any = false;
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).await? == 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if any {
                break;
            }
            continue; // stray blank line between frames
        }
        any = true;
        if let Some((name, value)) = text.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| format!("bad Content-Length `{}`", value.trim())),
                );
            }
        }
    }
    match length {
        None => Ok(Some(Err(Refused::Header(
            "a frame without Content-Length".to_string(),
        )))),
        Some(Err(e)) => Ok(Some(Err(Refused::Header(e)))),
        Some(Ok(n)) if n > MAX_FRAME => Ok(Some(Err(Refused::TooLarge(n)))),
        Some(Ok(n)) => {
            let mut body = vec![0; n];
            r.read_exact(&mut body).await?;
            Ok(Some(Ok(body)))
        }
    }
}

/// The error response for a body the server must not see, if it must not.
fn refusal(body: &[u8]) -> Option<Vec<u8>> {
    if serde_json::from_slice::<Request>(body).is_ok()
        || serde_json::from_slice::<Response>(body).is_ok()
    {
        return None;
    }
    let (code, message, id) = match serde_json::from_slice::<Value>(body) {
        Err(e) => (-32700, format!("Parse error: {e}"), Value::Null),
        Ok(v) => {
            let id = v
                .get("id")
                .filter(|id| id.is_number() || id.is_string())
                .cloned()
                .unwrap_or(Value::Null);
            (
                -32600,
                "Invalid request: not a JSON-RPC 2.0 message".to_string(),
                id,
            )
        }
    };
    let response =
        json!({ "jsonrpc": "2.0", "error": { "code": code, "message": message }, "id": id });
    Some(frame(response.to_string().as_bytes()))
}

async fn filter_input<I, W>(input: I, mut to_server: W, out: mpsc::UnboundedSender<Vec<u8>>)
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(1 << 16, input);
    loop {
        match read_frame(&mut input).await {
            Ok(Some(Ok(body))) => match refusal(&body) {
                None => {
                    if to_server.write_all(&frame(&body)).await.is_err() {
                        return;
                    }
                    let _ = to_server.flush().await;
                }
                Some(error) => {
                    let _ = out.send(error);
                }
            },
            Ok(Some(Err(refused))) => {
                let why = match &refused {
                    Refused::Header(why) => why.clone(),
                    Refused::TooLarge(n) => {
                        format!("a frame of {n} bytes, over the limit of {MAX_FRAME} bytes")
                    }
                };
                let response = json!({ "jsonrpc": "2.0", "error": { "code": -32700, "message": format!("Parse error: {why}") }, "id": null });
                let _ = out.send(frame(response.to_string().as_bytes()));
                if let Refused::TooLarge(n) = refused {
                    let mut rest = (&mut input).take(n as u64);
                    if tokio::io::copy(&mut rest, &mut tokio::io::sink())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
            Ok(None) | Err(_) => return, // end of input: the server sees EOF too
        }
    }
}

/// Copy the server's frames to the output, with the guard's error responses
/// between whole frames. One task, so a published verdict takes one hop.
async fn pump_output<R, O>(
    from_server: R,
    mut refusals: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: O,
    spliced: Spliced,
) where
    R: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut from_server = BufReader::with_capacity(1 << 16, from_server);
    let mut refusals_open = true;
    loop {
        tokio::select! {
            refusal = refusals.recv(), if refusals_open => match refusal {
                Some(bytes) => {
                    if output.write_all(&bytes).await.is_err() {
                        return;
                    }
                    let _ = output.flush().await;
                }
                None => refusals_open = false,
            },
            // `fill_buf` consumes nothing, so losing this race loses no bytes.
            more = async { from_server.fill_buf().await.map(|b| !b.is_empty()) } => {
                if !matches!(more, Ok(true)) {
                    break; // the server closed its output: it has exited
                }
                match read_frame(&mut from_server).await {
                    Ok(Some(Ok(body))) => {
                        let written = match spliced.claim(&body) {
                            Some((id, answer)) => {
                                let head = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":");
                                write_frame(&mut output, &[head.as_bytes(), &answer, b"}"]).await
                            }
                            None => write_frame(&mut output, &[&body]).await,
                        };
                        if written.is_err() {
                            return;
                        }
                    }
                    _ => break,
                }
            }
        }
    }
    let _ = output.shutdown().await;
}

/// Write one frame whose body is `parts` in order, without joining them.
async fn write_frame<O: AsyncWrite + Unpin>(
    output: &mut O,
    parts: &[&[u8]],
) -> std::io::Result<()> {
    let length: usize = parts.iter().map(|p| p.len()).sum();
    output
        .write_all(format!("Content-Length: {length}\r\n\r\n").as_bytes())
        .await?;
    for part in parts {
        output.write_all(part).await?;
    }
    output.flush().await
}

/// Serve LSP on `input`/`output` until `exit` or end of input. Returns whether
/// the client sent `shutdown` first (the process exit code depends on it).
pub async fn serve<I, O>(input: I, output: O, config: Config) -> bool
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (server_in, guard_in) = tokio::io::duplex(1 << 16);
    let (server_out, guard_out) = tokio::io::duplex(1 << 16);
    let (refusals_tx, refusals_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let input_task = tokio::spawn(filter_input(input, guard_in, refusals_tx));
    let spliced = Spliced::default();
    let output_task = tokio::spawn(pump_output(guard_out, refusals_rx, output, spliced.clone()));
    let (service, socket, shutdown) = crate::service_with(config, Some(spliced));
    Server::new(server_in, server_out, socket)
        .serve(service)
        .await;
    // After `exit` the input may stay open: stop reading it, then drain what
    // the server wrote and close the output.
    input_task.abort();
    let _ = input_task.await;
    let _ = output_task.await;
    shutdown.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_is_claimed_once_and_nothing_else_is() {
        let spliced = Spliced::default();
        let name = spliced.keep(b"[{\"name\":\"Task_1\"}]".to_vec());
        let stand_in =
            json!({ "jsonrpc": "2.0", "id": 7, "result": [ { "name": name, "kind": 1 } ] });
        let body = serde_json::to_vec(&stand_in).unwrap();
        let (id, answer) = spliced.claim(&body).expect("a stand-in");
        assert_eq!(id, json!(7));
        assert_eq!(answer, b"[{\"name\":\"Task_1\"}]");
        assert!(spliced.claim(&body).is_none(), "claimed once");
        // A name that only looks like one (no NUL: XML cannot write one) is an answer.
        let lookalike =
            json!({ "jsonrpc": "2.0", "id": 8, "result": [ { "name": "qflow-spliced:1" } ] });
        assert!(spliced
            .claim(&serde_json::to_vec(&lookalike).unwrap())
            .is_none());
    }

    #[test]
    fn only_the_latest_answers_are_kept() {
        let spliced = Spliced::default();
        let names: Vec<String> = (0..KEPT + 1)
            .map(|_| spliced.keep(b"[]".to_vec()))
            .collect();
        let body = |name: &str| {
            serde_json::to_vec(&json!({ "id": 1, "result": [ { "name": name } ] })).unwrap()
        };
        assert!(spliced.claim(&body(&names[0])).is_none(), "aged out");
        assert!(spliced.claim(&body(&names[KEPT])).is_some());
    }
}
