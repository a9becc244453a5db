//! `report.html` in a real browser: headless Chromium loads it with the
//! network cut off, and a probe script run in the page checks that every
//! chart is laid out and visible, that no element reaches past the page's
//! width (a wide table scrolls inside its own box) and that the page asks
//! for nothing outside itself. `.ci/run` installs Debian's `chromium` when
//! it is missing; without a browser the test says so loudly and skips.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const QUICKSTART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml");

/// The browser: `$RETRYSIM_CHROMIUM`, else the first of the usual names on the PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RETRYSIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// Measures the page where it stands and writes the result into the page.
const PROBE: &str = r#"<script id="probe">(function () {
  var W = document.documentElement.clientWidth;
  function clipped(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  }
  var over = [];
  document.querySelectorAll('body *').forEach(function (el) {
    if (el.id === 'probe') return;
    var r = el.getBoundingClientRect();
    if ((r.width > 0 || r.height > 0) && r.right > W + 0.5 && !clipped(el)) over.push(el.tagName + ' right ' + Math.round(r.right));
  });
  var charts = [];
  document.querySelectorAll('figure').forEach(function (f) {
    var s = f.querySelector('svg');
    var r = s ? s.getBoundingClientRect() : { width: 0, height: 0, right: 0 };
    var cs = s ? getComputedStyle(s) : null;
    charts.push({ id: f.id, width: r.width, height: r.height, right: r.right,
      shown: !!s && cs.display !== 'none' && cs.visibility !== 'hidden' && r.width > 200 && r.height > 100 && r.right <= W + 0.5,
      texts: s ? s.querySelectorAll('text').length : 0 });
  });
  var external = [];
  document.querySelectorAll('[src],[href],link,img,iframe,object,embed').forEach(function (el) { external.push(el.outerHTML.slice(0, 80)); });
  document.querySelectorAll('script').forEach(function (el) { if (el.id !== 'probe') external.push('script'); });
  var scrolling = [];
  document.querySelectorAll('body *').forEach(function (el) {
    var o = getComputedStyle(el).overflowX;
    if ((o === 'auto' || o === 'scroll') && el.scrollWidth > el.clientWidth + 1) scrolling.push(el.tagName + ' ' + el.scrollWidth + ' > ' + el.clientWidth);
  });
  var res = { width: W, scroll_width: document.documentElement.scrollWidth, over: over.slice(0, 20), charts: charts, external: external, scrolling: scrolling };
  var pre = document.createElement('pre');
  pre.id = 'probe-result';
  pre.textContent = 'PROBE' + JSON.stringify(res) + 'PROBE';
  document.body.appendChild(pre);
})();</script>"#;

/// Loads `html` in headless Chromium at `width` pixels, offline; the probe's result.
fn probe(browser: &Path, html: &Path, width: u32, scratch: &Path) -> Value {
    let page = std::fs::read_to_string(html).unwrap();
    let probed = scratch.join(format!("probe-{width}.html"));
    std::fs::write(&probed, page.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let profile = scratch.join(format!("profile-{width}"));
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"])
        .args(["--disable-extensions", "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={width},900"))
        .arg("--dump-dom")
        .arg(format!("file://{}", probed.display()))
        .env("HOME", scratch)
        .output()
        .expect("start chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("PROBE{")
        .unwrap_or_else(|| panic!("no probe result; chromium said: {}", String::from_utf8_lossy(&out.stderr)));
    let end = dom[start + 5..].find("}PROBE").unwrap() + start + 6;
    let json =
        dom[start + 5..end].replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("probe result is not JSON ({e}): {json}"))
}

/// `figures`: how many charts the page has (`None`: at least one).
fn check(browser: &Path, html: &Path, figures: Option<usize>, scratch: &Path) {
    for width in [1280, 800] {
        let r = probe(browser, html, width, scratch);
        let charts = r["charts"].as_array().unwrap();
        match figures {
            Some(n) => assert_eq!(charts.len(), n, "{}: figures at {width}px: {r}", html.display()),
            None => assert!(!charts.is_empty(), "{}: no figure at {width}px: {r}", html.display()),
        }
        // At a review's 1280 px nothing scrolls sideways, not even inside its own box.
        if width == 1280 {
            assert_eq!(
                r["scrolling"].as_array().unwrap().len(),
                0,
                "{}: a box scrolls sideways at 1280px: {r}",
                html.display()
            );
        }
        for c in charts {
            assert_eq!(c["shown"], true, "{}: chart not visible at {width}px: {c}", html.display());
            assert!(c["texts"].as_u64().unwrap() > 5, "chart without its text: {c}");
        }
        assert_eq!(
            r["over"].as_array().unwrap().len(),
            0,
            "{}: elements past the page width at {width}px: {r}",
            html.display()
        );
        assert!(r["scroll_width"].as_f64() <= r["width"].as_f64(), "the page scrolls sideways at {width}px: {r}");
        assert_eq!(r["external"].as_array().unwrap().len(), 0, "the page asks for other files: {r}");
        eprintln!(
            "report_in_browser: {} at {width}px: {} charts visible, no overflow, nothing external",
            html.display(),
            charts.len()
        );
    }
}

#[test]
fn reports_load_offline_with_every_chart_visible_and_nothing_wider_than_the_page() {
    let Some(browser) = chromium() else {
        eprintln!("\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        eprintln!("!! SKIPPED report_in_browser: no Chromium found (chromium, chromium-browser,");
        eprintln!("!! google-chrome on the PATH, or RETRYSIM_CHROMIUM). `.ci/run` installs");
        eprintln!("!! Debian's `chromium` with apt-get; here it could not be installed.");
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_retrysim");
    let run = tmp.path().join("run");
    let status = Command::new(bin)
        .args(["run", QUICKSTART, "--replications", "2", "-q", "--no-plots", "--out"])
        .arg(&run)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(Command::new(bin).args(["report", "-q"]).arg(&run).status().unwrap().success());
    let sweep = tmp.path().join("sweep");
    let status = Command::new(bin)
        .args(["sweep", QUICKSTART, "--param", "experiment.load_scale=0.6,1.0,1.4", "--replications", "1"])
        .args(["--set", "experiment.duration=35s", "-q", "--no-plots", "--out"])
        .arg(&sweep)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(Command::new(bin).args(["report", "-q"]).arg(&sweep).status().unwrap().success());
    // A tune over a small space, and a frontier.
    let tune_exp = tmp.path().join("tune.toml");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/tune-sdk.toml")).unwrap();
    let exp_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments");
    let (head, _) = text.rsplit_once("[tune.space]").unwrap();
    let head = head
        .replace("../policies/", &format!("{exp_dir}/../policies/"))
        .replace("scenarios = [\"normal-day.toml\", ", &format!("scenarios = [\"{exp_dir}/normal-day.toml\", "))
        .replace("\"bad-day-spike.toml\"", &format!("\"{exp_dir}/bad-day-spike.toml\""))
        .replace("\"bad-day-brownout.toml\"", &format!("\"{exp_dir}/bad-day-brownout.toml\""));
    std::fs::write(&tune_exp, format!("{head}[tune.space]\nmax_attempts = [2, 3]\n")).unwrap();
    let tune = tmp.path().join("tune");
    let status = Command::new(bin)
        .arg("tune")
        .arg(&tune_exp)
        .args(["--replications", "1", "-q", "--out"])
        .arg(&tune)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(Command::new(bin).args(["report", "-q"]).arg(&tune).status().unwrap().success());
    let frontier = tmp.path().join("frontier");
    let status = Command::new(bin)
        .args(["frontier", concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/frontier.toml")])
        .args(["--trigger", "spike", "--size", "1.5,2", "--replications", "2", "--variant", "immediate retries"])
        .args(["-q", "--out"])
        .arg(&frontier)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(Command::new(bin).args(["report", "-q"]).arg(&frontier).status().unwrap().success());
    check(&browser, &run.join("report.html"), Some(6), tmp.path());
    check(&browser, &sweep.join("report.html"), Some(5), tmp.path());
    check(&browser, &tune.join("report.html"), None, tmp.path());
    check(&browser, &frontier.join("report.html"), None, tmp.path());
}
