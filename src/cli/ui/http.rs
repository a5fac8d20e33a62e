//! The inspector's HTTP: one connection's requests read with httparse
//! (bounded in size and time, as `qflow serve`'s endpoint reads its own),
//! authentication (the endpoint's token, as a bearer header or a cookie set
//! from `?token=`), the cross-site check of every state-changing request,
//! and the answers: pages, the embedded assets, server-sent events.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::cli::wire::reason;
pub(crate) use crate::cli::wire::same_secret;

/// The request line and headers together, at most (`431` past it).
const HEAD_LIMIT: usize = 16 * 1024;
/// A form's body, at most (`413` past it).
const BODY_LIMIT: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

/// The cookie a browser keeps the token in once it came with `?token=`.
pub(crate) const TOKEN_COOKIE: &str = "qflow_ui_token";

/// One request as the routes read it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// The path, percent-decoded, without its query.
    pub path: String,
    /// The query's fields, decoded (a field given twice keeps the last).
    pub query: BTreeMap<String, String>,
    headers: Vec<(String, String)>,
    /// A form body's fields.
    pub form: BTreeMap<String, String>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A cookie's value.
    pub(crate) fn cookie(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == "cookie")
            .flat_map(|(_, v)| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    pub(crate) fn q(&self, name: &str) -> Option<&str> {
        self.query
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// An answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

impl Reply {
    pub(crate) fn html(status: u16, body: String) -> Reply {
        Reply {
            status,
            content_type: "text/html; charset=utf-8",
            body: body.into_bytes(),
            headers: Vec::new(),
        }
    }

    pub(crate) fn asset(content_type: &'static str, body: &'static str) -> Reply {
        let mut r = Reply {
            status: 200,
            content_type,
            body: body.as_bytes().to_vec(),
            headers: Vec::new(),
        };
        r.headers.push(("Cache-Control", "no-cache".into()));
        r
    }

    /// A JSON answer (not cached: it is read live).
    pub(crate) fn json(status: u16, body: String) -> Reply {
        let mut r = Reply {
            status,
            content_type: "application/json",
            body: body.into_bytes(),
            headers: Vec::new(),
        };
        r.headers.push(("Cache-Control", "no-store".into()));
        r
    }

    pub(crate) fn redirect(to: String) -> Reply {
        let mut r = Reply::html(303, String::new());
        r.headers.push(("Location", to));
        r
    }
}

/// Why a request could not be read.
pub(crate) enum ReadError {
    Closed,
    Timeout,
    Answer(u16, String),
}

fn fill(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, ReadError> {
    let left = deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or(ReadError::Timeout)?;
    stream
        .set_read_timeout(Some(left))
        .map_err(|_| ReadError::Closed)?;
    let mut buf = [0u8; 8192];
    match stream.read(&mut buf) {
        Ok(n) => {
            pending.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Err(ReadError::Timeout)
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(1),
        Err(_) => Err(ReadError::Closed),
    }
}

/// One request from `stream` (bytes already read in `pending`), within
/// `timeout`; whether the connection stays open after it.
pub(crate) fn read_request(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    timeout: Duration,
) -> Result<(Request, bool), ReadError> {
    let deadline = Instant::now() + timeout;
    let (head_len, method, target, version, headers) = loop {
        if !pending.is_empty() {
            let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut slots);
            match req.parse(pending) {
                Ok(httparse::Status::Complete(n)) => {
                    let headers: Vec<(String, String)> = req
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_ascii_lowercase(),
                                String::from_utf8_lossy(h.value).trim().to_string(),
                            )
                        })
                        .collect();
                    break (
                        n,
                        req.method.unwrap_or_default().to_string(),
                        req.path.unwrap_or_default().to_string(),
                        req.version.unwrap_or(1),
                        headers,
                    );
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => {
                    return Err(ReadError::Answer(
                        400,
                        format!("not an HTTP/1.1 request ({e})"),
                    ))
                }
            }
            if pending.len() >= HEAD_LIMIT {
                return Err(ReadError::Answer(
                    431,
                    format!("the request line and headers are over {HEAD_LIMIT} bytes"),
                ));
            }
        }
        if fill(stream, pending, deadline)? == 0 {
            return Err(ReadError::Closed);
        }
    };
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    if header("transfer-encoding").is_some() {
        return Err(ReadError::Answer(
            411,
            "send the body with a Content-Length".into(),
        ));
    }
    let length = match header("content-length") {
        None => 0,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| ReadError::Answer(400, format!("Content-Length `{v}` is not a number")))?,
    };
    if length > BODY_LIMIT {
        return Err(ReadError::Answer(
            413,
            format!("the body is {length} bytes, over the limit of {BODY_LIMIT}"),
        ));
    }
    while pending.len() < head_len + length {
        if fill(stream, pending, deadline)? == 0 {
            return Err(ReadError::Closed);
        }
    }
    let body = pending[head_len..head_len + length].to_vec();
    pending.drain(..head_len + length);
    let connection = header("connection").unwrap_or_default();
    let keep_alive = if version == 0 {
        connection.eq_ignore_ascii_case("keep-alive")
    } else {
        !connection.eq_ignore_ascii_case("close")
    };
    let (path, raw_query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.clone(), String::new()),
    };
    let form = if header("content-type")
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
    {
        fields(&String::from_utf8_lossy(&body))
    } else {
        BTreeMap::new()
    };
    Ok((
        Request {
            method,
            path: decode(&path),
            query: fields(&raw_query),
            headers,
            form,
        },
        keep_alive,
    ))
}

/// `a=1&b=two` decoded.
pub(crate) fn fields(text: &str) -> BTreeMap<String, String> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// Percent-decoding (and `+` as a space), lossy on bad UTF-8.
pub(crate) fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encoding of one query value.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The headers every page carries: nothing is loaded from another host
/// (the content security policy), the page is not framed, types are not
/// sniffed.
const SECURITY_HEADERS: &str = "Content-Security-Policy: default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
     form-action 'self'; base-uri 'none'; frame-ancestors 'none'\r\n\
     X-Content-Type-Options: nosniff\r\nReferrer-Policy: same-origin\r\nX-Frame-Options: DENY\r\n";

pub(crate) fn write_reply(
    stream: &mut TcpStream,
    reply: &Reply,
    keep_alive: bool,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{SECURITY_HEADERS}",
        reply.status,
        reason(reply.status),
        reply.content_type,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()
}

/// Start an event stream: the head, then events as they come.
pub(crate) fn start_events(stream: &mut TcpStream) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{SECURITY_HEADERS}Connection: close\r\n\r\nretry: 2000\n\n"
    );
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

/// One server-sent event whose data is `text` (each line its own `data:`).
pub(crate) fn send_event(stream: &mut TcpStream, event: &str, text: &str) -> io::Result<()> {
    let mut out = format!("event: {event}\n");
    for line in text.lines() {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    stream.write_all(out.as_bytes())?;
    stream.flush()
}

/// A comment line: keeps the stream open through proxies and finds a
/// client that went away.
pub(crate) fn send_keepalive(stream: &mut TcpStream) -> io::Result<()> {
    stream.write_all(b": keep-alive\n\n")?;
    stream.flush()
}

/// A fresh secret: 32 hex digits from the system's random source (the
/// process's hash seeds and the clock when it cannot be read).
pub(crate) fn secret() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            h.write_u32(std::process::id());
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
