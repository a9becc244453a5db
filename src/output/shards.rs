//! What the documents of sharded commands (`sweep.json`, `frontier.json`)
//! share: a shard's place in the whole, their files and table, and the
//! joining of a complete set of shards into the document the unsharded
//! command writes, byte for byte.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A shard's place in the whole: shard `k` of `n` (1 ≤ k ≤ n).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub k: usize,
    pub n: usize,
}

/// The commands whose runs can be split into shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `retrysim sweep`: a grid of points.
    Sweep,
    /// `retrysim frontier`: rows of variant, load and trigger length.
    Frontier,
}

impl Kind {
    /// The stem of the document's files: `sweep` for `sweep.json` and `sweep.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sweep => "sweep",
            Kind::Frontier => "frontier",
        }
    }

    /// The schema name the document carries.
    pub fn schema(self) -> &'static str {
        match self {
            Kind::Sweep => super::sweep::SWEEP_SCHEMA,
            Kind::Frontier => super::frontier::FRONTIER_SCHEMA,
        }
    }

    /// The pieces of the whole, in words: `points`.
    pub fn pieces(self) -> &'static str {
        match self {
            Kind::Sweep => "points",
            Kind::Frontier => "rows",
        }
    }

    /// What shards of one whole share, for the refusal of a shard of another.
    fn shared(self) -> &'static str {
        match self {
            Kind::Sweep => "experiment, seed, replications, grid or knee",
            Kind::Frontier => "experiment, seed, replications, trigger, sizes, loads or lengths",
        }
    }

    /// How the pieces make up the whole.
    fn cover(self) -> &'static str {
        match self {
            Kind::Sweep => "grid point by point",
            Kind::Frontier => "frontier row by row",
        }
    }
}

/// What merging reads of a document: its schema name, which shard it
/// holds (`None` for a whole) and how many pieces the whole has.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub schema: &'a str,
    pub shard: Option<ShardInfo>,
    pub whole: usize,
}

/// A document that a `--shard K/N` run writes in part and `retrysim merge`
/// joins: a whole made of indexed pieces (sweep points, frontier rows).
pub trait ShardedDoc: Clone + Serialize + DeserializeOwned {
    /// One piece of the whole.
    type Piece;
    /// Which command's document it is.
    const KIND: Kind;

    /// Whether `other` is a part of the same whole as `self`.
    fn same_whole(&self, other: &Self) -> bool;
    /// The document's schema name, shard and size of the whole.
    fn place(&self) -> Place<'_>;
    /// The pieces this document holds, each with its index in the whole.
    fn into_pieces(self) -> Vec<(usize, Self::Piece)>;
    /// The whole document: `first`'s description with every piece, in order.
    fn joined(first: Self, pieces: Vec<Self::Piece>) -> Self;

    /// The CSV file.
    fn to_csv(&self) -> anyhow::Result<String>;
    /// The table the terminal shows (`markdown` for a Markdown table).
    fn to_table(&self, markdown: bool) -> String;

    /// The JSON file, as written.
    fn to_json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }
}

/// Joins a complete, consistent set of shards (each with the folder it
/// came from, for messages) into the document of the unsharded command.
pub fn merge<D: ShardedDoc>(docs: Vec<(String, D)>) -> Result<D, String> {
    let kind = D::KIND;
    let file = format!("{}.json", kind.name());
    let Some((first_dir, first)) = docs.first().cloned() else { return Err("no shard folders given".into()) };
    let not_shard = |dir: &str| format!("{dir}: not a shard (no `shard` in {file})");
    let n = first.place().shard.map(|s| s.n).ok_or_else(|| not_shard(&first_dir))?;
    let mut seen = vec![None::<String>; n];
    for (dir, d) in &docs {
        let s = d.place().shard.ok_or_else(|| not_shard(dir))?;
        if s.n != n {
            return Err(format!("{dir} is shard {}/{} but {first_dir} is of {n} shards", s.k, s.n));
        }
        if !d.same_whole(&first) {
            let (what, shared) = (kind.name(), kind.shared());
            return Err(format!("{dir} comes from a different {what} than {first_dir} ({shared} differ)"));
        }
        if let Some(other) = &seen[s.k - 1] {
            return Err(format!("shard {}/{n} is given twice: {other} and {dir}", s.k));
        }
        seen[s.k - 1] = Some(dir.clone());
    }
    let missing: Vec<String> =
        seen.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| format!("{}/{n}", i + 1)).collect();
    if !missing.is_empty() {
        return Err(format!("incomplete set of shards: missing {}", missing.join(", ")));
    }
    let whole = first.place().whole;
    let mut pieces: Vec<(usize, D::Piece)> = docs.into_iter().flat_map(|(_, d)| d.into_pieces()).collect();
    pieces.sort_by_key(|(index, _)| *index);
    if pieces.len() != whole || pieces.iter().enumerate().any(|(i, (index, _))| *index != i) {
        return Err(format!("the shards do not cover the {}", kind.cover()));
    }
    Ok(D::joined(first, pieces.into_iter().map(|(_, p)| p).collect()))
}
