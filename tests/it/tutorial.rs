//! docs/tutorial.md runs as written: every line of its ```sh blocks that
//! starts with `retrysim ` is run, in order, with the built binary, in a
//! temporary folder holding a copy of experiments/ and policies/ (so that
//! the tutorial's repo-relative paths resolve and nothing it writes lands in
//! the repository), and must exit with status 0. A line `cat FILE >> FILE`
//! (the tutorial appends a question to the imported experiment) is done by
//! the test itself. Other lines of the blocks are not run.

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

enum Step {
    /// The words after `retrysim`.
    Retrysim(Vec<String>),
    /// `cat FROM >> TO`.
    Append(String, String),
}

/// Splits a line into words as a POSIX shell does for the simple cases the
/// tutorial uses: whitespace separates words, '...' is literal, "..." is
/// literal but for \" and \\, a backslash outside quotes escapes the next
/// character, and a # at the start of a word begins a comment.
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed ' in: {line}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("unclosed \" in: {line}")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed \" in: {line}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(format!("a line ending in \\ (continuation lines are not supported): {line}")),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The steps of the tutorial, each with the line it came from.
fn steps(markdown: &str) -> Vec<(String, Step)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        let t = line.trim();
        if !in_sh {
            in_sh = t == "```sh";
            continue;
        }
        if t.starts_with("```") {
            in_sh = false;
            continue;
        }
        let words = || shell_words(t).unwrap_or_else(|e| panic!("docs/tutorial.md: {e}"));
        if t.starts_with("retrysim ") {
            let words = words();
            for w in &words {
                assert!(
                    !w.contains(['*', '?', '$', '>', '<', '|', '`']),
                    "docs/tutorial.md: `{t}`: the test does not expand globs, variables or redirections ({w})"
                );
            }
            out.push((t.to_string(), Step::Retrysim(words[1..].to_vec())));
        } else if t.starts_with("cat ") {
            match words().as_slice() {
                [_, from, op, to] if op == ">>" => out.push((t.to_string(), Step::Append(from.clone(), to.clone()))),
                _ => panic!("docs/tutorial.md: `{t}`: only `cat FROM >> TO` is run"),
            }
        }
    }
    assert!(!in_sh, "docs/tutorial.md: an unclosed ```sh block");
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn shell_words_splits_like_a_shell() {
    assert_eq!(
        shell_words("retrysim run a.toml --set 'faults=[]'  # why").unwrap(),
        ["retrysim", "run", "a.toml", "--set", "faults=[]"]
    );
    assert_eq!(
        shell_words(r#"retrysim run x --variant "250ms per try" a\ b"#).unwrap(),
        ["retrysim", "run", "x", "--variant", "250ms per try", "a b"]
    );
    assert_eq!(shell_words(r#"a "x\"y" 'p"q' x#y"#).unwrap(), ["a", "x\"y", "p\"q", "x#y"]);
    assert_eq!(shell_words("a ''").unwrap(), ["a", ""]);
    assert!(shell_words("a 'b").is_err());
}

#[test]
fn every_command_of_the_tutorial_runs() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/tutorial.md")).unwrap();
    let steps = steps(&text);
    let commands: Vec<&Vec<String>> = steps
        .iter()
        .filter_map(|(_, s)| match s {
            Step::Retrysim(args) => Some(args),
            Step::Append(..) => None,
        })
        .collect();
    assert!(commands.len() >= 6, "only {} retrysim commands in docs/tutorial.md", commands.len());
    for sub in ["import-traces", "run", "frontier", "tune", "export", "report"] {
        assert!(
            commands.iter().any(|a| a.first().map(String::as_str) == Some(sub)),
            "docs/tutorial.md runs no `retrysim {sub}`"
        );
    }
    assert!(
        commands.iter().any(|a| a.iter().any(|w| w == "--compare-traces")),
        "docs/tutorial.md compares no run with the traces"
    );

    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    for dir in ["experiments", "policies"] {
        copy_dir(&Path::new(ROOT).join(dir), &cwd.join(dir));
    }
    for (line, step) in &steps {
        let started = std::time::Instant::now();
        match step {
            Step::Retrysim(args) => {
                let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
                    .args(args)
                    .current_dir(cwd)
                    .output()
                    .unwrap_or_else(|e| panic!("`{line}`: cannot start retrysim: {e}"));
                assert!(
                    out.status.success(),
                    "`{line}` exited with {:?}\n--- stderr:\n{}\n--- stdout:\n{}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr),
                    String::from_utf8_lossy(&out.stdout)
                );
            }
            Step::Append(from, to) => {
                let add = std::fs::read(cwd.join(from)).unwrap_or_else(|e| panic!("`{line}`: {from}: {e}"));
                let mut text = std::fs::read(cwd.join(to)).unwrap_or_else(|e| panic!("`{line}`: {to}: {e}"));
                text.extend_from_slice(&add);
                std::fs::write(cwd.join(to), text).unwrap();
            }
        }
        eprintln!("{:>6.2} s  {line}", started.elapsed().as_secs_f64());
    }
}
