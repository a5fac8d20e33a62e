//! A PostgreSQL server of one test's own, which the test may stop, restart
//! and cut connections of: what a database outage does to a running
//! `qflow serve`. (`support::stores` gives databases on a shared server,
//! which no test may restart.)
//!
//! Needs PostgreSQL's server programs (`initdb`, `pg_ctl`: Debian's
//! postgresql-15, or `PG_BIN`). Without them a test says it skips, or
//! fails under `QFLOW_REQUIRE_POSTGRES`. Run as root, the server runs as
//! the `postgres` user, as scripts/pg-throwaway.sh does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A running server on 127.0.0.1, stopped and removed when dropped.
pub(crate) struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

fn required() -> bool {
    std::env::var("QFLOW_REQUIRE_POSTGRES").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn server_bin() -> Option<PathBuf> {
    if let Ok(b) = std::env::var("PG_BIN") {
        return Some(PathBuf::from(b));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").exists())
        .collect();
    found.sort();
    found.pop()
}

impl Cluster {
    /// A new server, or `None` (said on stderr) when this machine has no
    /// PostgreSQL server programs.
    pub(crate) fn start(test: &str) -> Option<Cluster> {
        let Some(bin) = server_bin() else {
            assert!(
                !required(),
                "{test}: QFLOW_REQUIRE_POSTGRES is set but no PostgreSQL server programs \
                 (initdb, pg_ctl) were found: install postgresql-15 or set PG_BIN"
            );
            eprintln!("{test}: skipped (no PostgreSQL server programs: install postgresql-15)");
            return None;
        };
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let dir = std::env::temp_dir().join(format!("qflow-cluster-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = Cluster {
            dir,
            bin,
            port,
            as_postgres,
        };
        if as_postgres {
            let ok = Command::new("chown")
                .args(["postgres:", c.dir.to_str().unwrap()])
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown postgres: {}", c.dir.display());
        }
        let data = c.data();
        c.run(
            "initdb",
            &[
                "-D",
                &data,
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        c.start_again();
        Some(c)
    }

    fn data(&self) -> String {
        self.dir.join("data").to_string_lossy().into_owned()
    }

    fn run(&self, program: &str, args: &[&str]) {
        let path = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = cmd
            .args(args)
            .current_dir(Path::new("/"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The URL of its `postgres` database (qflow creates its tables there).
    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stop the server at once, as a crash or `pg_ctl stop -m immediate`
    /// does: every connection is cut, nothing is shut down cleanly.
    pub(crate) fn stop(&self) {
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        );
    }

    /// Start it (again) on the same port, waiting until it accepts.
    pub(crate) fn start_again(&self) {
        let log = self.dir.join("server.log").to_string_lossy().into_owned();
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log,
                "-w",
                "-t",
                "60",
                "-o",
                &opts,
                "start",
            ],
        );
    }

    /// End every other client's session (`pg_terminate_backend`), as an
    /// operator or a failover does; returns how many were ended.
    pub(crate) fn terminate_backends(&self) -> i64 {
        let mut admin = postgres::Client::connect(&self.url(), postgres::NoTls).unwrap();
        admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
                &[],
            )
            .unwrap()
            .get(0)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let path = self.bin.join("pg_ctl");
        let data = self.data();
        let args = ["-D", data.as_str(), "-m", "immediate", "stop"];
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&path)
                .args(args)
                .output()
        } else {
            Command::new(&path).args(args).output()
        };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
