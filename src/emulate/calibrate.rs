//! Whether this machine can drive the experiment: the requests per real
//! second it offers at its peak, against the HTTP exchanges per second
//! this machine completes (measured at start with the emulator's own
//! server and client code paths).

use crate::config::{ClientMode, Scenario};
use crate::error::InputError;
use bytes::Bytes;
use http_body_util::{Empty, Full};
use hyper_util::rt::TokioIo;
use std::time::{Duration, Instant};

/// The share of the measured capacity an emulation may use: the rest is
/// headroom for timers, retries and the load generator.
const HEADROOM: f64 = 0.5;

/// Requests per real second `s` offers at its peak without retries: every
/// intent reaches each service once.
pub fn offered_peak(s: &Scenario, time_scale: f64) -> f64 {
    let intents: f64 = s
        .clients
        .iter()
        .map(|c| match &c.mode {
            ClientMode::Open(schedule) => schedule.0.iter().map(|&(_, r)| r).fold(0.0, f64::max) * s.load_scale,
            ClientMode::Closed { think_time } => c.count as f64 / think_time.mean_secs().max(1e-3),
            ClientMode::Burst { spread, .. } => c.count as f64 / crate::engine::to_secs_f64(*spread).max(1e-3),
        })
        .sum();
    intents * s.services.len().max(1) as f64 / time_scale
}

/// HTTP/1.1 exchanges per second this machine completes, each on a new
/// connection, measured for about 300 ms.
pub fn measure() -> anyhow::Result<f64> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let rate = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_req| async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::new())))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let start = Instant::now();
        let span = Duration::from_millis(300);
        let mut loops = Vec::new();
        for _ in 0..4 {
            loops.push(tokio::spawn(async move {
                let mut n = 0u64;
                while start.elapsed() < span {
                    let Ok(stream) = tokio::net::TcpStream::connect(addr).await else { break };
                    let Ok((mut sender, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
                    else {
                        break;
                    };
                    let conn = tokio::spawn(conn);
                    let req = hyper::Request::post("/").body(Empty::<Bytes>::new()).expect("valid");
                    if sender.send_request(req).await.is_ok() {
                        n += 1;
                    }
                    conn.abort();
                }
                n
            }));
        }
        let mut total = 0;
        for l in loops {
            total += l.await.unwrap_or(0);
        }
        server.abort();
        anyhow::Ok(total as f64 / start.elapsed().as_secs_f64())
    })?;
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(rate)
}

/// Refuses (exit 2) a variant offering more than this machine drives,
/// unless `force`.
pub fn check(variants: &[Scenario], time_scale: f64, force: bool) -> anyhow::Result<()> {
    let worst = variants.iter().map(|v| (offered_peak(v, time_scale), v)).max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((offered, v)) = worst else { return Ok(()) };
    if force {
        return Ok(());
    }
    let capacity = measure()?;
    if offered > HEADROOM * capacity {
        return Err(InputError::file(
            format!("variant \"{}\"", v.variant),
            format!(
                "offers about {offered:.0} requests per real second at its peak (before retries), more than this machine drives with headroom ({:.0} of the {capacity:.0} exchanges per second measured now); slow it with --time-scale {:.1} or lower the load with --set experiment.load_scale=..., or run anyway with --force",
                HEADROOM * capacity,
                (time_scale * offered / (HEADROOM * capacity)).ceil().max(2.0)
            ),
        )
        .into());
    }
    Ok(())
}
