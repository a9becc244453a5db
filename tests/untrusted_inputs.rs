//! Inputs a user or a tool wrote that are odd, hostile or huge: every
//! command answers them with a result that loads or with a clear refusal
//! (exit 2 naming the file, the field or the flag), never with a panic, a
//! hang, unbounded memory or a silent default.
//!
//! Each case runs the real binary with a deadline, and kills it (SIGKILL)
//! when it has not ended by then, so that a hang fails the test instead of
//! stalling the suite.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the binary gave.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `retrysim ARGS` in `dir`, killing it after `secs` seconds.
fn retrysim_in(dir: &Path, secs: u64, args: &[&str]) -> Ran {
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(dir)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes on threads, so a chatty child never blocks on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut s).ok();
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(secs) {
            child.kill().ok();
            child.wait().ok();
            panic!("retrysim {args:?} did not end within {secs} s (a hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    }
}

/// Policy names with characters Rust's debug format escapes in its own way
/// (`\u{202e}`), which is no TOML or YAML.
const ODD_NAMES: &[&str] =
    &["a\u{202e}b", "zero\u{200b}width", "soft\u{ad}hyphen", "bell\u{7}", "\u{301}combining", "quote\"back\\slash"];

#[test]
fn policy_names_with_any_character_are_written_as_toml_and_yaml_read_them() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in ODD_NAMES.iter().enumerate() {
        let policy =
            format!("name = {}\nmax_attempts = 3\nper_try_timeout = \"1s\"\n", toml::Value::String(name.to_string()));
        let file = dir.path().join(format!("p{i}.toml"));
        std::fs::write(&file, &policy).unwrap();
        let f = file.to_str().unwrap();
        // vectors re-writes the policy for every case, and must read it back.
        let r = retrysim_in(dir.path(), 60, &["vectors", f]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let text = doc["cases"][0]["policy"].as_str().unwrap();
        let back: toml::Table = text.parse().unwrap_or_else(|e| panic!("{name:?}: {e}\n{text}"));
        assert_eq!(back["name"].as_str(), Some(*name));
        // Every export that carries the name carries it exactly: the
        // Linkerd annotation, read back by the import.
        let r = retrysim_in(dir.path(), 30, &["export", f, "--to", "linkerd"]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{}", r.stdout));
        assert_eq!(yaml["metadata"]["annotations"]["retrysim.io/policy"].as_str(), Some(*name), "{}", r.stdout);
        let exported = dir.path().join(format!("p{i}.linkerd.yaml"));
        std::fs::write(&exported, &r.stdout).unwrap();
        let r = retrysim_in(dir.path(), 30, &["import", exported.to_str().unwrap(), "--from", "linkerd"]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let back: toml::Table = r.stdout.parse().unwrap_or_else(|e| panic!("{name:?}: {e}\n{}", r.stdout));
        assert_eq!(back["name"].as_str(), Some(*name));
        // An Istio VirtualService whose metadata.name is odd imports as a
        // policy file that loads.
        let vs = format!(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: {}\nspec:\n  hosts: [backend]\n  http:\n  - route:\n    - destination: {{ host: backend }}\n    retries: {{ attempts: 2, perTryTimeout: 1s, retryOn: \"5xx\" }}\n",
            serde_json::Value::String(name.to_string())
        );
        let vs_file = dir.path().join(format!("vs{i}.yaml"));
        std::fs::write(&vs_file, vs).unwrap();
        let r = retrysim_in(dir.path(), 30, &["import", vs_file.to_str().unwrap(), "--from", "istio"]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let back: toml::Table = r.stdout.parse().unwrap_or_else(|e| panic!("{name:?}: {e}\n{}", r.stdout));
        assert_eq!(back["name"].as_str(), Some(*name));
    }
}
