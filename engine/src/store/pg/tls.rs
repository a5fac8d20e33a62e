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

#[cfg(test)]
mod tests {
    use super::config;

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
}
