//! `--db postgres://…?sslmode=…` as a user writes it: a run over a verified
//! TLS connection (the throwaway cluster's CA as `sslrootcert`), and a
//! certificate that does not verify named with the fix, exit 2.

mod support;
use support::qflow_here as qflow;
use support::stores::{tls_dir, Fresh};

#[test]
fn a_run_over_verify_full_and_a_certificate_that_does_not_verify() {
    let test = "store_tls";
    let (Some(fresh), Some(tls)) = (Fresh::postgres(test), tls_dir(test)) else {
        return;
    };
    let db = fresh.db();
    let verified = format!(
        "{db}?sslmode=verify-full&sslrootcert={}",
        tls.join("ca.crt").display()
    );
    let (code, out, err) = qflow(&[
        "run",
        "samples/dbg08-long-outage.bpmn",
        "--db",
        &verified,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["status"], &last["attempts"]),
        (&"failed".into(), &6.into())
    );
    // Another CA: the same database, refused before anything is read.
    let other = tls.join("other-ca.crt");
    let unverified = format!("{db}?sslmode=verify-full&sslrootcert={}", other.display());
    let (code, out, err) = qflow(&["instances", "--db", &unverified]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains(&format!("cannot connect to {unverified} over TLS"))
            && err.contains(&format!(
                "does not verify against the CA in sslrootcert={}",
                other.display()
            ))
            && err.contains("give the certificate of the CA that signed it as sslrootcert="),
        "{err}"
    );
    // Plain connections stay allowed: the instance is there.
    let (code, out, err) = qflow(&["instances", "--db", &db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(r#""instance":"dbg08-1""#), "{out}");
}
