//! The wire between the editor and [`tower_lsp_server::Server`], with a guard.
//!
//! tower-lsp-server's reader stops for good at the first frame it cannot
//! decode (tokio-util ends a framed stream after a decoder error), so one
//! malformed message from a client would silently end the session. The guard
//! reads frames itself, forwards only those that are JSON-RPC messages, and
//! answers the others with the JSON-RPC error the specification asks for
//! (`-32700` parse error, `-32600` invalid request), through an output mux
//! that interleaves whole frames with the server's own.

use std::sync::atomic::Ordering;

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
                        if output.write_all(&frame(&body)).await.is_err() {
                            return;
                        }
                        let _ = output.flush().await;
                    }
                    _ => break,
                }
            }
        }
    }
    let _ = output.shutdown().await;
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
    let output_task = tokio::spawn(pump_output(guard_out, refusals_rx, output));
    let (service, socket, shutdown) = crate::service(config);
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
