//! Per-edge metrics count attempts per intent of the edge's own client class.

use crate::common;

use common::{load, run};

#[test]
fn each_client_edge_is_divided_by_its_own_intents() {
    let exp = load(
        r#"
[experiment]
name = "two classes"
duration = "20s"
replications = 3

[[clients]]
name = "web"
rate = "300/s"
target = "api"

[[clients]]
name = "batch"
rate = "100/s"
target = "api"
policy = { max_attempts = 3, per_try_timeout = "1s", retry_on = ["503"] }

[[services]]
name = "api"
workers = 100
service_time = { dist = "const", value = "1ms" }

[[faults]]
kind = "error"
target = "api"
probability = 0.5
"#,
    );
    for r in run(&exp, 3) {
        let edge = |name: &str| r.edges.iter().find(|(n, _)| n == name).unwrap().1["attempts_per_intent"].unwrap();
        // web never retries: exactly one attempt per web intent.
        assert_eq!(edge("web->api"), 1.0);
        // batch: (1 - 0.5^3) / 0.5 = 1.75 attempts per batch intent (2000 intents:
        // sd of the mean ~ 0.017).
        let batch = edge("batch->api");
        assert!((batch - 1.75).abs() < 0.07, "batch {batch}");
    }
}
