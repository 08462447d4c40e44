//! The compactor's pure decisions, unit-tested without files: which groups of datafiles to
//! rewrite ([`plan`]) and which markers of a group survive ([`select_markers`]).

use crate::format::MarkerType;
use crate::CompactionOptions;
use std::collections::HashMap;

/// Per-datafile statistics the compaction planner decides on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// File id.
    pub fid: u64,
    /// Size on disk.
    pub file_size: u64,
    /// Live documents in the file.
    pub alive_count: u64,
    /// Bytes of live document markers.
    pub alive_bytes: u64,
    /// Dead document markers.
    pub dead_count: u64,
    /// Bytes of dead document markers.
    pub dead_bytes: u64,
    /// Removal markers.
    pub removes: u64,
}

/// The compaction planner: which contiguous groups of datafiles (in MANIFEST order) to
/// rewrite. Pure, so that the thresholds are unit-tested without files.
///
/// A file is a candidate when its dead bytes reach `dead_size_threshold`, or its dead share
/// reaches `dead_size_percent_threshold`, or its dead markers reach
/// `dead_documents_threshold`, or it is smaller than `min_small_data_file_size` and has a
/// neighbour to merge with. `force` (explicit compaction) makes every file with any dead
/// marker or removal a candidate. A group starts at a candidate and extends over following
/// files while it stays within `max_files` and the result size cap
/// (`min(max_result_file_size, journal_size * max_file_size_factor)`).
pub fn plan(
    files: &[FileStat],
    options: &CompactionOptions,
    journal_size: u64,
    force: bool,
) -> Vec<Vec<u64>> {
    // Never above 2 GiB: a result must stay addressable with 32-bit offsets.
    let cap = options
        .max_result_file_size
        .min(journal_size.saturating_mul(options.max_file_size_factor.max(1)))
        .min(1 << 31);
    let is_candidate = |f: &FileStat| {
        let dead_share = if f.alive_bytes + f.dead_bytes == 0 {
            0.0
        } else {
            f.dead_bytes as f64 / (f.alive_bytes + f.dead_bytes) as f64
        };
        (f.dead_bytes > 0
            && (f.dead_bytes >= options.dead_size_threshold
                || dead_share >= options.dead_size_percent_threshold
                || f.dead_count >= options.dead_documents_threshold))
            || (force && (f.dead_count > 0 || f.removes > 0))
            || (f.file_size < options.min_small_data_file_size && files.len() > 1)
    };
    let mut groups = Vec::new();
    let mut i = 0;
    while i < files.len() {
        if !is_candidate(&files[i]) {
            i += 1;
            continue;
        }
        let mut group = vec![files[i].fid];
        let mut size = files[i].alive_bytes;
        let mut j = i + 1;
        while j < files.len()
            && group.len() < options.max_files.max(1)
            && size + files[j].alive_bytes <= cap
            && (is_candidate(&files[j]) || files[j].file_size < options.min_small_data_file_size)
        {
            size += files[j].alive_bytes;
            group.push(files[j].fid);
            j += 1;
        }
        // A lone small file without dead data gains nothing from a rewrite.
        let lone_small_clean = group.len() == 1
            && files[i].dead_count == 0
            && files[i].removes == 0
            && files[i].dead_bytes == 0;
        if !lone_small_clean {
            groups.push(group);
        }
        i = j;
    }
    groups
}

/// What compaction needs to know about one marker of its inputs (in file order).
pub(super) struct MarkerInfo {
    pub(super) kind: MarkerType,
    pub(super) tick: u64,
    pub(super) key: Option<String>,
    /// Some version in the index (any snapshot's) points at this document marker.
    pub(super) referenced: bool,
}

/// Decides which markers of a compaction group survive: referenced documents, removals
/// that `keep_all_removals` protects (an older file or a WAL segment may hold the key) or
/// that delete an older document version this result keeps, and the truncate marker at
/// `truncate_floor`, the newest durable truncate. Removals and truncates below that floor
/// are dropped: the truncate, which stays in a listed file, already covers what they
/// delete.
pub(super) fn select_markers(
    markers: impl Iterator<Item = MarkerInfo>,
    keep_all_removals: bool,
    truncate_floor: u64,
) -> Vec<bool> {
    let markers: Vec<MarkerInfo> = markers.collect();
    let mut oldest_kept: HashMap<&str, u64> = HashMap::new();
    for m in &markers {
        if let (MarkerType::Document, true, Some(key)) = (m.kind, m.referenced, &m.key) {
            let t = oldest_kept.entry(key.as_str()).or_insert(m.tick);
            *t = (*t).min(m.tick);
        }
    }
    markers
        .iter()
        .map(|m| match m.kind {
            MarkerType::Document => m.referenced,
            // Not yet known to be durable elsewhere (or the newest): kept.
            MarkerType::Truncate => m.tick >= truncate_floor,
            _ if m.tick < truncate_floor => false,
            _ => {
                keep_all_removals
                    || match &m.key {
                        Some(key) => oldest_kept.get(key.as_str()).is_some_and(|t| *t < m.tick),
                        // Undecodable here means it was decoded before; keep it to be safe.
                        None => true,
                    }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(fid: u64, alive: u64, dead: u64, removes: u64) -> FileStat {
        FileStat {
            fid,
            file_size: alive + dead + removes * 48 + 200,
            alive_count: alive / 100,
            alive_bytes: alive,
            dead_count: dead / 100,
            dead_bytes: dead,
            removes,
        }
    }

    fn opts() -> CompactionOptions {
        CompactionOptions {
            min_small_data_file_size: 0,
            ..CompactionOptions::default()
        }
    }

    fn info(kind: MarkerType, tick: u64, key: &str, referenced: bool) -> MarkerInfo {
        MarkerInfo {
            kind,
            tick,
            key: Some(key.to_string()),
            referenced,
        }
    }

    /// The tombstone-vs-GC race of an explicit `compact()`: a snapshot pinned the old
    /// version of `k` when the referenced set was taken, then it was released and a GC pass
    /// dropped `k` from the index before the removal marker was reached. The decision must
    /// follow what is copied, not the index at that later moment.
    #[test]
    fn removal_survives_when_an_older_version_of_its_key_is_kept() {
        let keep = select_markers(
            [
                info(MarkerType::Document, 5, "k", true),
                info(MarkerType::Document, 6, "other", false),
                info(MarkerType::Remove, 7, "k", false),
                info(MarkerType::Remove, 8, "other", false),
            ]
            .into_iter(),
            false,
            0,
        );
        assert_eq!(keep, [true, false, true, false]);
    }

    #[test]
    fn a_durable_truncate_drops_older_removals_and_truncates_but_keeps_itself() {
        let keep = select_markers(
            [
                info(MarkerType::Document, 3, "k", true),
                info(MarkerType::Remove, 4, "k", false),
                info(MarkerType::Truncate, 5, "", false),
                info(MarkerType::Truncate, 8, "", false),
                info(MarkerType::Remove, 9, "k", false),
                info(MarkerType::Truncate, 10, "", false),
            ]
            .into_iter(),
            true,
            8,
        );
        // The document is referenced (an old snapshot); the removal at 4 and the truncate
        // at 5 are covered by the durable truncate at 8; what is at or above 8 stays.
        assert_eq!(keep, [true, false, false, true, true, true]);
    }

    #[test]
    fn removal_is_dropped_when_only_newer_versions_are_kept_and_kept_when_protected() {
        let markers = || {
            [
                info(MarkerType::Document, 3, "k", false),
                info(MarkerType::Remove, 4, "k", false),
                info(MarkerType::Document, 9, "k", true),
            ]
            .into_iter()
        };
        assert_eq!(select_markers(markers(), false, 0), [false, false, true]);
        assert_eq!(select_markers(markers(), true, 0), [false, true, true]);
        let undecodable = MarkerInfo {
            key: None,
            ..info(MarkerType::Remove, 4, "", false)
        };
        assert_eq!(select_markers([undecodable].into_iter(), false, 0), [true]);
    }

    #[test]
    fn plan_picks_files_over_thresholds_only() {
        let mb = 1 << 20;
        // 5 % dead, below every threshold: nothing to do.
        let files = vec![stat(1, 19 * mb / 10, mb / 10, 0), stat(2, 2 * mb, 0, 0)];
        let o = CompactionOptions {
            dead_size_threshold: 4 * mb,
            ..opts()
        };
        assert!(plan(&files, &o, 32 * mb, false).is_empty());
        // Dead share of 50 % passes the percent threshold.
        let files = vec![stat(1, mb, mb, 0), stat(2, 2 * mb, 0, 0)];
        assert_eq!(plan(&files, &o, 32 * mb, false), vec![vec![1]]);
        // Absolute dead size passes even with a small share.
        let files = vec![stat(1, 100 * mb, 5 * mb, 0)];
        assert_eq!(plan(&files, &o, 32 * mb, false), vec![vec![1]]);
        // Explicit compaction takes any dead data and removals.
        let files = vec![
            stat(1, 2 * mb, 100, 0),
            stat(2, 2 * mb, 0, 3),
            stat(3, mb, 0, 0),
        ];
        assert_eq!(plan(&files, &o, 32 * mb, true), vec![vec![1, 2]]);
        assert!(plan(&files, &o, 32 * mb, false).is_empty());
    }

    #[test]
    fn plan_respects_max_files_and_result_cap() {
        let mb = 1 << 20;
        let files: Vec<FileStat> = (1..=7).map(|f| stat(f, mb, mb, 0)).collect();
        let o = CompactionOptions {
            max_files: 3,
            ..opts()
        };
        assert_eq!(
            plan(&files, &o, 32 * mb, false),
            vec![vec![1, 2, 3], vec![4, 5, 6], vec![7]]
        );
        // Result cap = journal size x factor = 2 MiB: one file of 1 MiB alive each, two fit.
        let o = CompactionOptions {
            max_file_size_factor: 2,
            ..o
        };
        assert_eq!(
            plan(&files[..4], &o, mb, false),
            vec![vec![1, 2], vec![3, 4]]
        );
    }

    #[test]
    fn plan_merges_small_files_but_not_a_lone_clean_one() {
        let o = CompactionOptions {
            min_small_data_file_size: 128 * 1024,
            ..CompactionOptions::default()
        };
        let small = |fid| stat(fid, 10_000, 0, 0);
        assert_eq!(
            plan(&[small(1), small(2), small(3)], &o, 32 << 20, false),
            vec![vec![1, 2, 3]]
        );
        assert!(plan(&[small(1)], &o, 32 << 20, false).is_empty());
        let big_clean = stat(9, 10 << 20, 0, 0);
        assert!(plan(&[big_clean.clone(), small(10)], &o, 32 << 20, false).is_empty());
    }
}
