//! A URL handler over https, as an operator configures one: a server whose
//! certificate the system trusts answers and the attempt succeeds; one whose
//! certificate it does not trust is never sent the request, so the attempt
//! is a transient `q.handler.unreachable` (retried on the policy), never an
//! unknown outcome waiting for reconciliation.
//!
//! The certificate is made with the `openssl` command (CI installs it);
//! where it is missing the test says so and passes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

/// A self-signed certificate for 127.0.0.1 and its key, as PEM files in `dir`.
fn certificate(dir: &Path) -> Option<(Vec<u8>, Vec<u8>)> {
    let made = Command::new("openssl")
        .current_dir(dir)
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .output();
    match made {
        Ok(o) if o.status.success() => Some((
            std::fs::read(dir.join("cert.pem")).unwrap(),
            std::fs::read(dir.join("key.pem")).unwrap(),
        )),
        _ => {
            eprintln!(
                "skipping the https handler test: the `openssl` command is missing or failed"
            );
            None
        }
    }
}

/// Serves every connection on a thread: a TLS handshake, one request read
/// whole, a 200 with `{"charged": true}`. A handshake the client refuses
/// is counted and dropped. Returns the port and the count of requests read.
fn serve(cert: &[u8], key: &[u8]) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let identity = native_tls::Identity::from_pkcs8(cert, key).unwrap();
    let acceptor = native_tls::TlsAcceptor::new(identity).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let Ok(tls) = acceptor.accept(stream) else {
                continue;
            };
            let mut reader = BufReader::new(tls);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let answer = b"{\"charged\": true}";
            let mut tls = reader.into_inner();
            let _ = write!(
                tls,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                answer.len()
            );
            let _ = tls.write_all(answer);
            let _ = tls.flush();
        }
    });
    (port, requests)
}

fn run(dir: &Path, trusted: Option<&Path>) -> (i32, String) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qflow"));
    cmd.current_dir(dir).args([
        "run",
        repo.join("samples/dbg08-charge.bpmn").to_str().unwrap(),
        "--handlers",
        "handlers.toml",
    ]);
    match trusted {
        // OpenSSL's own variables: the bundle the system trusts.
        Some(bundle) => cmd.env("SSL_CERT_FILE", bundle),
        None => cmd.env_remove("SSL_CERT_FILE"),
    };
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn an_https_handler_is_reached_when_its_certificate_is_trusted_and_never_sent_to_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = certificate(dir.path()) else {
        return;
    };
    let (port, requests) = serve(&cert, &key);
    std::fs::write(
        dir.path().join("handlers.toml"),
        format!("[tasks.\"payments.charge\"]\nurl = \"https://127.0.0.1:{port}/charge\"\ntimeout = \"PT10S\"\n"),
    )
    .unwrap();

    let (code, out) = run(dir.path(), Some(&dir.path().join("cert.pem")));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("COMPLETED"), "{out}");
    assert_eq!(
        requests.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{out}"
    );

    // The same server, its certificate not among the trusted roots: the
    // handshake fails before the request is written.
    let (_, out) = run(dir.path(), None);
    assert!(
        out.contains("attempt 1 of payments.charge: failed q.handler.unreachable (transient)")
            && out.contains("certificate verify failed"),
        "{out}"
    );
    assert!(!out.contains("q.handler.timeout"), "{out}");
    assert_eq!(
        requests.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no request reached the server: {out}"
    );
}
