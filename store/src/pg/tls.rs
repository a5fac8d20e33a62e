//! TLS where the URL asks for it, with libpq's meanings of `sslmode`:
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | no | — |
//! | `prefer` (the default) | if the server offers it | no |
//! | `require` | yes, or no connection | no (yes, against `sslrootcert`, when given) |
//! | `verify-ca` | yes | chain to a trusted root (the system's, or `sslrootcert`) |
//! | `verify-full` | yes | chain and host name |
//!
//! The client library knows `disable`, `prefer` and `require`; the two
//! verifying modes and `sslrootcert` are read here and become settings of
//! the TLS connector (native-tls: the platform's TLS, OpenSSL on Linux).

use postgres_native_tls::MakeTlsConnector;

use crate::StoreError;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verify {
    Nothing,
    Chain,
    ChainAndHost,
}

/// The client configuration and TLS connector for `url`, or why the URL
/// cannot be used (a message naming the option).
pub(super) fn config(url: &str) -> Result<(postgres::Config, MakeTlsConnector), String> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut verify = Verify::Nothing;
    let mut root: Option<String> = None;
    let mut kept: Vec<&str> = Vec::new();
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        match kv.split_once('=') {
            Some(("sslmode", "verify-ca")) => {
                verify = Verify::Chain;
                kept.push("sslmode=require");
            }
            Some(("sslmode", "verify-full")) => {
                verify = Verify::ChainAndHost;
                kept.push("sslmode=require");
            }
            Some(("sslrootcert", path)) => root = Some(path.to_string()),
            _ => kept.push(kv),
        }
    }
    if root.is_some() && verify == Verify::Nothing {
        // libpq: a root certificate given means the chain is checked.
        verify = Verify::Chain;
    }
    let rebuilt = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let config: postgres::Config = rebuilt
        .parse()
        .map_err(|e| format!("not a PostgreSQL connection URL ({e})"))?;
    let mut b = native_tls::TlsConnector::builder();
    match verify {
        Verify::Nothing => {
            b.danger_accept_invalid_certs(true)
                .danger_accept_invalid_hostnames(true);
        }
        Verify::Chain => {
            b.danger_accept_invalid_hostnames(true);
        }
        Verify::ChainAndHost => {}
    }
    if let Some(path) = root {
        let pem = std::fs::read(&path).map_err(|e| format!("sslrootcert {path}: {e}"))?;
        let cert = native_tls::Certificate::from_pem(&pem)
            .map_err(|e| format!("sslrootcert {path}: not a PEM certificate ({e})"))?;
        b.add_root_certificate(cert);
    }
    let connector = b.build().map_err(|e| format!("TLS setup failed: {e}"))?;
    Ok((config, MakeTlsConnector::new(connector)))
}

/// Why connecting to `url` (shown as `shown`, without its password)
/// failed, with the fix when it is known: a database the server does not
/// have, or TLS (a server that refuses it where the URL requires it, a
/// certificate that does not verify or does not name the host).
pub(super) fn connect_error(url: &str, shown: &str, e: &postgres::Error) -> StoreError {
    if e.code() == Some(&postgres::error::SqlState::INVALID_CATALOG_NAME) {
        if let Ok((config, _)) = config(url) {
            if let Some(name) = config.get_dbname() {
                return StoreError::NoDatabase {
                    url: shown.to_string(),
                    name: name.to_string(),
                };
            }
        }
    }
    let cause = full_cause(e);
    let root = url.split_once('?').and_then(|(_, q)| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("sslrootcert="))
            .map(str::to_string)
    });
    let fix = if cause.contains("server does not support TLS") {
        Some(
            "the server refuses TLS connections: turn TLS on in its postgresql.conf \
             (ssl = on, with ssl_cert_file and ssl_key_file) and reload it, or, where an \
             unencrypted connection is acceptable, remove sslmode from the URL"
                .to_string(),
        )
    } else if cause.contains("certificate verify failed") {
        let against = match &root {
            Some(path) => format!("the CA in sslrootcert={path}"),
            None => "the system's trusted roots".to_string(),
        };
        // OpenSSL says "Hostname mismatch" for a name and "IP address
        // mismatch" for an address: the chain verified either way.
        let lower = cause.to_ascii_lowercase();
        Some(
            if lower.contains("hostname mismatch") || lower.contains("ip address mismatch") {
                format!(
                    "the server's certificate does not name the URL's host{}: connect by a \
                 name or address the certificate lists, or use sslmode=verify-ca to check \
                 the chain to {against} without the host name",
                    host(url).map(|h| format!(" {h}")).unwrap_or_default()
                )
            } else {
                format!(
                    "the server's certificate does not verify against {against}: give the \
                 certificate of the CA that signed it as sslrootcert=/path/to/ca.crt, or \
                 use sslmode=require to encrypt without checking the certificate"
                )
            },
        )
    } else {
        None
    };
    match fix {
        Some(fix) => StoreError::Tls {
            url: shown.to_string(),
            cause,
            fix,
        },
        None => StoreError::Connect {
            url: shown.to_string(),
            cause,
        },
    }
}

/// The host `url` connects to (the first, when it lists several), as the
/// certificate's names are checked against it.
fn host(url: &str) -> Option<String> {
    let (config, _) = config(url).ok()?;
    match config.get_hosts().first()? {
        postgres::config::Host::Tcp(name) => Some(name.clone()),
        postgres::config::Host::Unix(path) => Some(path.display().to_string()),
    }
}

/// An error with every cause under it, `outer: inner: …` (the client's
/// own text leaves the TLS library's reason out).
pub(crate) fn full_cause(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::config;
    use crate::StoreError;

    #[test]
    fn libpq_modes_are_understood_and_bad_urls_named() {
        for url in [
            "postgres://u@localhost:5432/q",
            "postgres://u@localhost/q?sslmode=disable",
            "postgres://u@localhost/q?sslmode=require",
            "postgres://u@localhost/q?sslmode=verify-full&application_name=qflow",
            "postgresql://u@localhost/q?sslmode=verify-ca",
        ] {
            assert!(config(url).is_ok(), "{url}");
        }
        let e = config("postgres://u@localhost/q?sslmode=sometimes")
            .err()
            .unwrap();
        assert!(e.starts_with("not a PostgreSQL connection URL"), "{e}");
        let e = config("postgres://u@localhost/q?sslrootcert=/no/such.pem")
            .err()
            .unwrap();
        assert!(e.starts_with("sslrootcert /no/such.pem:"), "{e}");
    }

    /// The server and its TLS directory (`scripts/pg-throwaway.sh` makes
    /// both: ca.crt signed the server's certificate, other-ca.crt did
    /// not); `None`, saying the test skips, without them — a failure under
    /// `QFLOW_REQUIRE_POSTGRES`.
    fn tls_server(test: &str) -> Option<(String, std::path::PathBuf)> {
        let url = super::super::test_server(test)?;
        match std::env::var("QFLOW_TEST_POSTGRES_TLS_DIR") {
            Ok(dir) if !dir.trim().is_empty() => Some((url, dir.into())),
            _ => {
                let required = std::env::var("QFLOW_REQUIRE_POSTGRES")
                    .is_ok_and(|v| !v.is_empty() && v != "0");
                assert!(
                    !required,
                    "{test}: QFLOW_REQUIRE_POSTGRES is set but QFLOW_TEST_POSTGRES_TLS_DIR is not: \
                     run the tests under scripts/pg-throwaway.sh run …"
                );
                eprintln!(
                    "{test}: skipped (QFLOW_TEST_POSTGRES_TLS_DIR is not set: \
                     `scripts/pg-throwaway.sh run cargo test` provides a server with TLS)"
                );
                None
            }
        }
    }

    /// A fresh database on the server, its URL with `query` appended.
    fn fresh(server: &str, test: &str, query: &str) -> String {
        let name = format!("qflow_tls_{}_{test}", std::process::id());
        let url = super::super::scratch_database(server, &name).unwrap();
        format!("{url}?{query}")
    }

    fn connect(url: &str) -> Result<crate::Store, crate::StoreError> {
        crate::Store::connect(&crate::Location::Postgres(url.to_string()))
    }

    fn encrypted(store: &mut crate::Store) -> bool {
        match &mut store.backend {
            crate::Database::Postgres(p) => p.encrypted(),
            crate::Database::Sqlite(_) => unreachable!(),
        }
    }

    #[test]
    fn require_encrypts_verify_full_checks_the_ca_and_plain_stays_allowed() {
        let Some((server, dir)) = tls_server("tls_modes") else {
            return;
        };
        let ca = dir.join("ca.crt");
        let url = fresh(&server, "modes", "sslmode=require");
        let base = url.split_once('?').unwrap().0;
        // The throwaway server's certificate names localhost, not the
        // address of its URL: verify-full connects by that name.
        let by_name = base.replacen("@127.0.0.1:", "@localhost:", 1);
        for (query, tls) in [
            ("sslmode=require".to_string(), true),
            (
                format!("sslmode=verify-full&sslrootcert={}", ca.display()),
                true,
            ),
            (
                format!("sslmode=verify-ca&sslrootcert={}", ca.display()),
                true,
            ),
            ("sslmode=disable".to_string(), false),
        ] {
            let host = if query.contains("verify-full") {
                &by_name
            } else {
                base
            };
            let url = format!("{host}?{query}");
            let mut store = connect(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(encrypted(&mut store), tls, "{url}");
            // The same store either way: a deployment made over one
            // connection is seen over the others.
            store.deploy("p", "<definitions/>", 0).unwrap();
            assert_eq!(store.deployments().unwrap().len(), 1, "{url}");
        }
    }

    #[test]
    fn a_certificate_that_does_not_verify_is_named_with_the_fix() {
        let Some((server, dir)) = tls_server("tls_unverified") else {
            return;
        };
        let other = dir.join("other-ca.crt");
        let url = fresh(
            &server,
            "unverified",
            &format!("sslmode=verify-full&sslrootcert={}", other.display()),
        );
        // With a password in the URL (the throwaway server trusts any).
        let url = match url.split_once("://").and_then(|(_, r)| r.split_once('@')) {
            Some((user, _)) if !user.contains(':') => {
                url.replacen(&format!("{user}@"), &format!("{user}:s3cret-pw@"), 1)
            }
            _ => url,
        };
        let e = connect(&url)
            .err()
            .expect("the certificate does not verify");
        assert!(matches!(e, StoreError::Tls { .. }), "{e:?}");
        let text = e.to_string();
        assert!(!text.contains("s3cret-pw"), "{text}");
        assert!(
            text.contains(&crate::location::redact(&url))
                && text.contains("certificate verify failed")
                && text.contains(&format!(
                    "does not verify against the CA in sslrootcert={}",
                    other.display()
                ))
                && text.contains("sslrootcert=/path/to/ca.crt")
                && text.contains("sslmode=require"),
            "{text}"
        );
    }

    /// A server that answers the TLS request with "no" (as PostgreSQL does
    /// with ssl off): a PostgreSQL server of its own, no cluster needed.
    #[test]
    fn a_server_that_refuses_tls_is_named_with_the_fix() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut peer, _) = listener.accept().unwrap();
            let mut request = [0u8; 8];
            peer.read_exact(&mut request).unwrap();
            // SSLRequest: length 8, code 80877103.
            assert_eq!(request, [0, 0, 0, 8, 4, 210, 22, 47]);
            peer.write_all(b"N").unwrap();
        });
        let url = format!("postgres://qflow:s3cret-pw@127.0.0.1:{port}/q?sslmode=require");
        let e = connect(&url).err().expect("refused");
        server.join().unwrap();
        let text = e.to_string();
        assert!(matches!(e, StoreError::Tls { .. }), "{e:?}");
        assert!(
            text.starts_with(&format!(
                "cannot connect to postgres://qflow:***@127.0.0.1:{port}/q?sslmode=require over TLS"
            )) && text.contains("server does not support TLS")
                && text.contains("ssl = on")
                && text.contains("remove sslmode from the URL")
                && !text.contains("s3cret-pw"),
            "{text}"
        );
    }
}
