//! A scripted `grpc.health.v1.Health` server (tonic and the code
//! `tonic-health` ships) on 127.0.0.1: the n-th `Check` call gets the n-th
//! reply of the script — a status, optionally with the gRFC A6 pushback
//! `grpc-retry-pushback-ms` — and a call past the end gets DATA_LOSS,
//! which no test expects. Arrivals and answers are noted as in
//! `served.rs`.
#![allow(dead_code)]

use crate::served::Log;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use tonic::{Code, Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

/// One scripted reply to `Check`.
#[derive(Debug, Clone, Copy)]
pub enum Reply {
    /// OK with status SERVING.
    Serving,
    /// An error status.
    Fail(Code),
    /// UNAVAILABLE with `grpc-retry-pushback-ms`.
    Pushback(u64),
}

struct Scripted {
    replies: Arc<Vec<Reply>>,
    log: Log,
}

#[tonic::async_trait]
impl Health for Scripted {
    async fn check(&self, _: Request<HealthCheckRequest>) -> Result<Response<HealthCheckResponse>, Status> {
        let n = self.log.arrived();
        let reply = self.replies.get(n).copied().unwrap_or(Reply::Fail(Code::DataLoss));
        self.log.answering(n);
        match reply {
            Reply::Serving => Ok(Response::new(HealthCheckResponse { status: ServingStatus::Serving as i32 })),
            Reply::Fail(code) => Err(Status::new(code, "scripted")),
            Reply::Pushback(ms) => {
                let mut status = Status::unavailable("scripted pushback");
                status.metadata_mut().insert("grpc-retry-pushback-ms", ms.to_string().parse().unwrap());
                Err(status)
            }
        }
    }

    type WatchStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(&self, _: Request<HealthCheckRequest>) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("not scripted"))
    }
}

/// A running script.
pub struct Script {
    /// Where it listens.
    pub addr: SocketAddr,
    /// What was served so far.
    pub log: Log,
}

impl Script {
    /// Binds 127.0.0.1 on a free port and serves `replies` on the current
    /// tokio runtime until the runtime ends.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let log = Log::default();
        let service = HealthServer::new(Scripted { replies: Arc::new(replies), log: log.clone() });
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        Self { addr, log }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }
}
