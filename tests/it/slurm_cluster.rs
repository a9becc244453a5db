//! The Slurm recipe of docs/cluster.md, run as written on a single-node
//! Slurm cluster started here (munged, slurmctld and slurmd on this host,
//! with a minimal slurm.conf in a temporary folder): a job array of
//! `frontier` shards and a dependent merge, whose merged files must equal
//! the unsharded frontier's byte for byte.
//!
//! Needs Debian's `slurm-wlm` and `munge` (`.ci/run` installs them when it
//! can); without them the test says loudly that it skipped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The test's stand-in for experiments/frontier.toml: immediate retries in
/// front of a 1000/s service at 300 intents/s, just above μ/(1+R) = 250/s.
const EXPERIMENT: &str = r#"# Question: a small frontier for the cluster test.
[experiment]
name = "cluster frontier"
duration = "60s"
warmup = "2s"
seed = 5
replications = 5

[[clients]]
name = "web"
count = 1000
rate = "300/s"
target = "api"
operation = "search"
policy = { max_attempts = 4, per_try_timeout = "300ms", retry_on = ["timeout"] }

[[operations]]
name = "search"
idempotent = true

[[services]]
name = "api"
workers = 10
service_time = { dist = "exp", mean = "10ms" }

[[variants]]
name = "immediate retries"

[[variants]]
name = "LIFO queue"
set = { "services.api.queue" = { discipline = "lifo" } }
"#;

fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The first fenced code block after the first line containing `marker`.
fn block_after(doc: &str, marker: &str) -> String {
    let start = doc.find(marker).unwrap_or_else(|| panic!("docs/cluster.md has no {marker}"));
    let rest = &doc[start..];
    let open = rest.find("```").expect("a code block");
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Daemons started by the test, stopped (by their pid files) when it ends.
struct Daemons(Vec<PathBuf>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for pid_file in &self.0 {
            if let Ok(pid) = std::fs::read_to_string(pid_file) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
    }
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_slurm_recipe_of_docs_cluster_md_merges_frontier_shards_into_the_unsharded_files() {
    let tools: Vec<Option<PathBuf>> =
        ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"].iter().map(|p| find(p)).collect();
    if tools.iter().any(Option::is_none) {
        eprintln!(
            "\n!!!!! SKIPPED the_slurm_recipe_of_docs_cluster_md...: munged, slurmctld, slurmd, sbatch, squeue or sinfo \
             is not installed (Debian: apt-get install slurm-wlm munge; .ci/run does this when it can) !!!!!\n"
        );
        return;
    }
    let [munged, slurmctld, slurmd, _sbatch, squeue, sinfo] =
        <[Option<PathBuf>; 6]>::try_from(tools).unwrap().map(Option::unwrap);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut daemons = Daemons(Vec::new());
    // munge, on a socket of its own.
    let munge_dir = d.join("munge");
    std::fs::create_dir(&munge_dir).unwrap();
    let socket = munge_dir.join("munge.sock");
    run_ok(Command::new(&munged).args([
        "--force",
        &format!("--socket={}", socket.display()),
        &format!("--log-file={}", munge_dir.join("munged.log").display()),
        &format!("--pid-file={}", munge_dir.join("munged.pid").display()),
        &format!("--seed-file={}", munge_dir.join("seed").display()),
    ]));
    daemons.0.push(munge_dir.join("munged.pid"));
    let host = run_ok(Command::new("hostname").arg("-s")).trim().to_string();
    for sub in ["state", "spool"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    let conf = d.join("slurm.conf");
    let p = |f: &str| d.join(f).display().to_string();
    let user = run_ok(Command::new("id").arg("-un")).trim().to_string();
    std::fs::write(
        &conf,
        format!(
            "ClusterName=retrysimtest\nSlurmctldHost={host}\nSlurmUser={user}\nSlurmdUser={user}\n\
             AuthType=auth/munge\nAuthInfo=socket={sock}\nCredType=cred/munge\n\
             SlurmctldPort={p1}\nSlurmdPort={p2}\nStateSaveLocation={state}\nSlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={cpid}\nSlurmdPidFile={dpid}\nSlurmctldLogFile={clog}\nSlurmdLogFile={dlog}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSwitchType=switch/none\nMpiDefault=none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/backfill\n\
             ReturnToService=2\nJobCompType=jobcomp/none\nJobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             NodeName={host} CPUs={cpus} State=UNKNOWN\nPartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            sock = socket.display(),
            p1 = free_port(),
            p2 = free_port(),
            state = p("state"),
            spool = p("spool"),
            cpid = p("slurmctld.pid"),
            dpid = p("slurmd.pid"),
            clog = p("slurmctld.log"),
            dlog = p("slurmd.log"),
            cpus = std::thread::available_parallelism().map_or(1, |n| n.get()),
        ),
    )
    .unwrap();
    run_ok(Command::new(&slurmctld).arg("-f").arg(&conf));
    daemons.0.push(d.join("slurmctld.pid"));
    run_ok(Command::new(&slurmd).arg("-f").arg(&conf));
    daemons.0.push(d.join("slurmd.pid"));
    let started = Instant::now();
    loop {
        let out = Command::new(&sinfo).args(["-h", "-o", "%T"]).env("SLURM_CONF", &conf).output().unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == "idle" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the node never became idle: {}", p("slurmctld.log"));
        std::thread::sleep(Duration::from_millis(500));
    }
    // The recipe, as written in docs/cluster.md, in a folder with the
    // experiment it names and retrysim on the PATH.
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cluster.md")).unwrap();
    let script = block_after(&doc, "`frontier.sbatch`");
    let submit = block_after(&doc, "Submit the frontier's array");
    let work = d.join("work");
    std::fs::create_dir_all(work.join("experiments")).unwrap();
    std::fs::write(work.join("experiments/frontier.toml"), EXPERIMENT).unwrap();
    std::fs::write(work.join("frontier.sbatch"), &script).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_retrysim")).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        [bin].into_iter().chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    run_ok(Command::new("bash").arg("-c").arg(&submit).current_dir(&work).env("PATH", &path).env("SLURM_CONF", &conf));
    // Wait until every job has left the queue.
    let started = Instant::now();
    loop {
        let out = Command::new(&squeue).args(["-h"]).env("SLURM_CONF", &conf).output().unwrap();
        if out.status.success() && String::from_utf8_lossy(&out.stdout).trim().is_empty() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(900), "jobs still queued after 15 minutes");
        std::thread::sleep(Duration::from_secs(1));
    }
    let merged = work.join("frontier-merged");
    let logs: Vec<String> = std::fs::read_dir(work.join("logs"))
        .map(|r| r.flatten().map(|e| std::fs::read_to_string(e.path()).unwrap_or_default()).collect())
        .unwrap_or_default();
    assert!(merged.join("frontier.json").is_file(), "the merge job wrote nothing; logs: {logs:?}");
    // The unsharded frontier: the script's command line without --jobs, --shard and --out.
    let line = script.replace("\\\n", " ");
    let command = line.lines().find(|l| l.trim_start().starts_with("retrysim frontier")).expect("a frontier command");
    let mut args: Vec<String> = Vec::new();
    let mut words = command.split_whitespace().skip(1);
    while let Some(w) = words.next() {
        match w {
            "--jobs" | "--shard" | "--out" => {
                words.next();
            }
            _ => args.push(w.trim_matches('\'').trim_matches('"').to_string()),
        }
    }
    let whole = work.join("whole");
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(&args)
        .args(["--out", whole.to_str().unwrap()])
        .current_dir(&work)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for f in ["frontier.json", "frontier.csv"] {
        assert_eq!(std::fs::read(whole.join(f)).unwrap(), std::fs::read(merged.join(f)).unwrap(), "{f} differs");
    }
    let shards = std::fs::read_dir(work.join("frontier-shards")).unwrap().count();
    assert!(shards >= 2, "{shards} shards");
    eprintln!(
        "slurm: {shards} shards run as a job array, merged by a dependent job, byte-identical to the unsharded frontier"
    );
    drop(daemons);
}
