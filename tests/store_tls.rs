//! `--db postgres://…` as a user writes it: a run over a verified TLS
//! connection (the throwaway cluster's CA as `sslrootcert`); a certificate
//! that does not verify, one that does not name the URL's host, a database
//! the server does not have and one that holds no qflow tables yet, each
//! named with what to do, exit 2.

mod support;
use support::qflow_here as qflow;
use support::stores::{by_name, tls_dir, Fresh};

#[test]
fn a_run_over_verify_full_and_a_certificate_that_does_not_verify() {
    let test = "store_tls";
    let (Some(fresh), Some(tls)) = (Fresh::postgres(test), tls_dir(test)) else {
        return;
    };
    let db = fresh.db();
    let verified = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        by_name(&db),
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

/// The server's certificate names `localhost`; a URL by the address
/// `127.0.0.1` reaches the same server, and `verify-full` refuses it for
/// the host name alone (the chain verifies): the error names the URL with
/// its password hidden, the host, and both ways out; `verify-ca` by the
/// same address connects.
#[test]
fn a_certificate_that_does_not_name_the_urls_host_is_named_with_the_fix() {
    let test = "store_tls_host";
    let (Some(fresh), Some(tls)) = (Fresh::postgres(test), tls_dir(test)) else {
        return;
    };
    let db = fresh.db();
    let ca = tls.join("ca.crt");
    // A password in the URL (the throwaway server trusts any).
    let with_password = db.replacen("postgres://postgres@", "postgres://postgres:s3cret-pw@", 1);
    assert_ne!(with_password, db, "{db}");
    let by_address = format!(
        "{with_password}?sslmode=verify-full&sslrootcert={}",
        ca.display()
    );
    let (code, out, err) = qflow(&["instances", "--db", &by_address]);
    assert_eq!(code, 2, "{out}");
    let shown = by_address.replacen(":s3cret-pw@", ":***@", 1);
    assert!(
        !err.contains("s3cret-pw")
            && err.contains(&format!("cannot connect to {shown} over TLS"))
            && err.contains("does not name the URL's host 127.0.0.1")
            && err.contains("connect by a name or address the certificate lists")
            && err.contains(&format!(
                "use sslmode=verify-ca to check the chain to the CA in sslrootcert={} without the host name",
                ca.display()
            )),
        "{err}"
    );
    // By the name the certificate gives: connected.
    let named = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        by_name(&with_password),
        ca.display()
    );
    let (code, _, err) = qflow(&["deploy", "samples/dbg08-long-outage.bpmn", "--db", &named]);
    assert_eq!(code, 0, "{err}");
    // The chain alone, by the address: connected, the deployment is there.
    let chain_only = format!(
        "{with_password}?sslmode=verify-ca&sslrootcert={}",
        ca.display()
    );
    let (code, out, err) = qflow(&["deployments", "--db", &chain_only]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("samples/dbg08-long-outage.bpmn"), "{out}");
}

/// A database `createdb` made that no qflow has run against is refused by
/// a reading command for what it is (not "no such database": it exists),
/// and a deployment creates the tables; a database the server does not
/// have is named with `createdb`, by a reading command and by a run alike
/// (qflow creates its tables, never the database).
#[test]
fn an_empty_database_and_a_missing_one_are_named_with_what_to_do() {
    let Some(fresh) = Fresh::postgres("store_pg_empty") else {
        return;
    };
    let db = fresh.db();
    let (code, _, err) = qflow(&["instances", "--db", &db]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "--db {db}: the database holds no qflow tables yet \
             (a run or `qflow deploy MODEL --db {db}` creates them)"
        )),
        "{err}"
    );
    let (code, _, err) = qflow(&["deploy", "samples/dbg08-long-outage.bpmn", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = qflow(&["instances", "--db", &db, "--format", "json"]);
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "{\"instances\":[],\"limit\":50,\"next_offset\":null,\"offset\":0,\"total\":0}\n"
        ),
        "{err}"
    );

    let missing = format!("{db}_gone");
    let name = missing.rsplit('/').next().unwrap();
    for args in [
        vec!["instances", "--db", &missing],
        vec!["run", "samples/dbg08-long-outage.bpmn", "--db", &missing],
    ] {
        let (code, _, err) = qflow(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "cannot connect to {missing}: the server has no database {name} \
                 (create it: `createdb {name}`, or CREATE DATABASE {name}; \
                 the first run or `qflow deploy` creates qflow's tables in it)"
            )),
            "{args:?}: {err}"
        );
    }
}
