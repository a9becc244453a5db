//! What `sweep` and `frontier` share on the command line: writing their
//! document (a shard's with the checksums `merge` verifies), printing it,
//! and `retrysim merge` of their shards.

use super::{EXIT_OK, Format};
use crate::error::InputError;
use crate::output::frontier::FrontierDoc;
use crate::output::manifest::{self, MANIFEST, Manifest};
use crate::output::shards::{ShardedDoc, merge};
use crate::output::sweep::SweepDoc;
use crate::output::write_atomic;
use clap::Args;
use std::path::{Path, PathBuf};

/// Draws the charts of the document in a folder into another folder.
pub type Charts = fn(&Path, &Path) -> anyhow::Result<Vec<String>>;

/// `retrysim merge`.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Output folders of `retrysim sweep --shard K/N` (or `frontier --shard K/N`), one per shard.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where to write the merged sweep.json and sweep.csv.
    #[arg(long)]
    pub out: PathBuf,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Do not draw charts.
    #[arg(long)]
    pub no_plots: bool,
}

/// Writes `doc`'s JSON and CSV files to `out` and, for a shard, the record
/// of their checksums; then, for a whole, its charts unless `no_plots`.
pub fn write_doc<D: ShardedDoc>(
    doc: &D,
    out: &Path,
    inputs: &[PathBuf],
    no_plots: bool,
    charts: Charts,
) -> anyhow::Result<()> {
    let (json_name, csv_name) = file_names::<D>();
    let (json, csv) = (doc.to_json()?, doc.to_csv()?);
    write_atomic(&out.join(&json_name), json.as_bytes(), inputs)?;
    write_atomic(&out.join(&csv_name), csv.as_bytes(), inputs)?;
    if doc.place().shard.is_some() {
        // What `merge` verifies: the shard's own files, as written, and this version.
        let record = Manifest::of(&[(&json_name, json.as_bytes()), (&csv_name, csv.as_bytes())]);
        write_atomic(&out.join(MANIFEST), record.to_json().as_bytes(), inputs)?;
    } else {
        // Charts of an earlier run here that this one does not draw again go.
        let drawn = if no_plots { Vec::new() } else { charts(out, out)? };
        crate::charts::record::prune(out, &json_name, &drawn, inputs)?;
    }
    Ok(())
}

/// Prints `doc` on stdout in `format`.
pub fn print_doc<D: ShardedDoc>(doc: &D, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Json => print!("{}", doc.to_json()?),
        Format::Csv => print!("{}", doc.to_csv()?),
        Format::Table => print!("{}", doc.to_table(false)),
        Format::Markdown => print!("{}", doc.to_table(true)),
    }
    Ok(())
}

/// The names of `D`'s JSON and CSV files.
fn file_names<D: ShardedDoc>() -> (String, String) {
    (format!("{}.json", D::KIND.name()), format!("{}.csv", D::KIND.name()))
}

/// A shard's folder, given as the folder or as a file in it.
fn folder_of(dir: &Path) -> PathBuf {
    if dir.is_file() { dir.parent().map(PathBuf::from).unwrap_or_default() } else { dir.to_path_buf() }
}

/// Whether `dir` (a folder or a file in it) holds a frontier shard.
pub fn is_frontier(dir: &Path) -> bool {
    let folder = folder_of(dir);
    folder.join("frontier.json").is_file() && !folder.join("sweep.json").is_file()
}

/// Runs the `merge` command: of frontier shards when the first folder holds one, else of sweep shards.
pub fn run_merge(args: &MergeArgs) -> anyhow::Result<i32> {
    if args.dirs.first().is_some_and(|d| is_frontier(d)) {
        merge_shards::<FrontierDoc>(args, crate::charts::frontier::frontier_chart)
    } else {
        merge_shards::<SweepDoc>(args, crate::charts::sweep_charts)
    }
}

/// `retrysim merge` of shards of `D`.
fn merge_shards<D: ShardedDoc>(args: &MergeArgs, charts: Charts) -> anyhow::Result<i32> {
    let (json_name, csv_name) = file_names::<D>();
    let mut docs = Vec::new();
    let mut inputs: Vec<PathBuf> = Vec::new();
    for dir in &args.dirs {
        let folder = folder_of(dir);
        let path = folder.join(&json_name);
        let shown = path.display().to_string();
        inputs.extend([path.clone(), folder.join(&csv_name), folder.join(MANIFEST)]);
        // The shard's files must be as it wrote them (checksums in shard.json).
        let bytes = manifest::verify(&folder, &json_name)?;
        let text = String::from_utf8(bytes).map_err(|_| InputError::file(&shown, "not UTF-8 text"))?;
        let doc: D = serde_json::from_str(&text).map_err(|e| {
            InputError::file(&shown, format!("not a {json_name}: {}", crate::config::messages::plain(&e.to_string())))
        })?;
        let (schema, wanted) = (doc.place().schema, D::KIND.schema());
        if schema != wanted {
            return Err(InputError::file(&shown, format!("schema \"{schema}\" is not {wanted}")).into());
        }
        docs.push((dir.display().to_string(), doc));
    }
    crate::output::check_outputs(&[args.out.join(&json_name), args.out.join(&csv_name)], &inputs)?;
    let merged = merge(docs).map_err(|m| InputError::file("retrysim merge", m))?;
    write_atomic(&args.out.join(&json_name), merged.to_json()?.as_bytes(), &inputs)?;
    write_atomic(&args.out.join(&csv_name), merged.to_csv()?.as_bytes(), &inputs)?;
    let drawn = if args.no_plots { Vec::new() } else { charts(&args.out, &args.out)? };
    crate::charts::record::prune(&args.out, &json_name, &drawn, &inputs)?;
    if !args.quiet {
        let (whole, pieces) = (merged.place().whole, D::KIND.pieces());
        eprintln!("merged {} shards ({whole} {pieces}) into {}", args.dirs.len(), args.out.display());
    }
    Ok(EXIT_OK)
}
