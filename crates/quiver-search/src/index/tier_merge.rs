//! ArangoDB's `tier` consolidation policy as tantivy's merge policy. Segments are sorted by
//! their size without deletions (bytes on disk × live / all documents); every run of at most
//! `segmentsMax` consecutive segments (at least `segmentsMin`, at most `segmentsBytesMax`
//! bytes together) is scored, and the best one is merged:
//!
//! - the sizes' coefficient of variation, each size raised to `segmentsBytesFloor` first (so
//!   segments below the floor count as equal): similar sizes score higher;
//! - × (segments / `segmentsMax`)^1.5: more segments at once score higher;
//! - ÷ √(bytes merged): smaller merges score higher;
//! - ÷ (bytes without deletions / bytes)²: merges that drop deleted documents score higher.
//!
//! A lone segment is a candidate only with deletions, and then only when nothing else is.
//! Runs scoring below `minScore` are skipped; segments above half of `segmentsBytesMax` with
//! fewer deletions than the index as a whole are left alone. This is iresearch's
//! `ConsolidateTier` of ArangoDB 3.12, with one rule of ArangoDB 3.12.7's tier policy on top:
//! a run whose largest segment holds more than [`MAX_SKEW`] of its bytes is skipped. Without
//! it a large segment is merged again with every small segment a commit adds (tantivy asks the
//! policy after every commit and every finished merge); with it similar segments wait for
//! each other, at least three at once.

use std::path::{Path, PathBuf};

use tantivy::merge_policy::{MergeCandidate, MergePolicy};
use tantivy::SegmentMeta;

/// The largest share of a merge's bytes one of its segments may hold (ArangoDB 3.12.7's
/// default `maxSkewThreshold`).
pub const MAX_SKEW: f64 = 0.4;

/// The tier policy's parameters (the view's `consolidationPolicy`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TierOptions {
    /// `segmentsMin`: fewest segments merged at once (at least 1).
    pub segments_min: usize,
    /// `segmentsMax`: most segments merged at once (at least 1).
    pub segments_max: usize,
    /// `segmentsBytesMax`: most bytes merged at once.
    pub segments_bytes_max: u64,
    /// `segmentsBytesFloor`: segments below this size count as this size.
    pub segments_bytes_floor: u64,
    /// `minScore`: runs scoring below are not merged.
    pub min_score: f64,
}

impl Default for TierOptions {
    /// ArangoDB's defaults.
    fn default() -> Self {
        TierOptions {
            segments_min: 1,
            segments_max: 10,
            segments_bytes_max: 5 << 30,
            segments_bytes_floor: 2 << 20,
            min_score: 0.0,
        }
    }
}

/// What the policy knows of a segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentSize {
    /// Bytes of its files.
    pub bytes: u64,
    /// Documents, deleted ones included.
    pub docs: u32,
    /// Live documents.
    pub live_docs: u32,
}

impl SegmentSize {
    fn fill(&self) -> f64 {
        if self.docs == 0 {
            1.0
        } else {
            f64::from(self.live_docs) / f64::from(self.docs)
        }
    }

    /// Approximate bytes without the deleted documents.
    fn live_bytes(&self) -> u64 {
        (self.bytes as f64 * self.fill()) as u64
    }
}

/// One segment while choosing: its index in the caller's list, its size and fill.
#[derive(Clone, Copy)]
struct Sized {
    at: usize,
    size: u64,
    fill: f64,
    segment: SegmentSize,
}

/// The score of merging `run` (see the module's documentation); 0 for nothing worth merging.
fn score(run: &[Sized], options: &TierOptions) -> f64 {
    match run {
        [] => return 0.0,
        [one] => {
            return if one.segment.live_docs == one.segment.docs {
                0.0
            } else {
                // With deletions: better than nothing, worse than anything else.
                f64::MIN_POSITIVE + f64::EPSILON
            };
        }
        _ => {}
    }
    let floor = options.segments_bytes_floor.max(1);
    let count = run.len() as f64;
    let before: u64 = run.iter().map(|s| s.segment.bytes).sum();
    let after: u64 = run.iter().map(|s| s.size).sum();
    let mean = run.iter().map(|s| s.size.max(floor) as f64).sum::<f64>() / count;
    let variance = run
        .iter()
        .map(|s| (s.size.max(floor) as f64 - mean).powi(2))
        .sum::<f64>()
        / count;
    let cv = variance.sqrt() / mean;
    let mut score = 1.0 - cv;
    score *= (count / options.segments_max.max(1) as f64).powf(1.5);
    score /= (after as f64).sqrt();
    score /= (after as f64 / before as f64).powi(2);
    score
}

/// Whether the largest segment of `run` (of two or more) holds more than [`MAX_SKEW`] of its
/// bytes.
fn too_skewed(run: &[Sized]) -> bool {
    if run.len() < 2 {
        return false;
    }
    let total: u64 = run.iter().map(|s| s.size).sum();
    let largest = run.iter().map(|s| s.size).max().unwrap_or(0);
    total > 0 && largest as f64 > MAX_SKEW * total as f64
}

/// The segments (indexes into `segments`, none being merged already) to merge next, in
/// ascending size; empty when no run qualifies.
pub fn pick(options: &TierOptions, segments: &[SegmentSize]) -> Vec<usize> {
    let segments_max = options.segments_max.max(1);
    let segments_min = options.segments_min.clamp(1, segments_max);
    let bytes_max = options.segments_bytes_max.max(1);
    let mut total_docs = 0u64;
    let mut total_live = 0u64;
    let mut sorted: Vec<Sized> = Vec::with_capacity(segments.len());
    for (at, segment) in segments.iter().enumerate() {
        if segment.live_docs == 0 {
            // Tantivy drops a segment without live documents at the next commit.
            continue;
        }
        total_docs += u64::from(segment.docs);
        total_live += u64::from(segment.live_docs);
        sorted.push(Sized {
            at,
            size: segment.live_bytes(),
            fill: segment.fill(),
            segment: *segment,
        });
    }
    if sorted.len() < segments_min {
        return Vec::new();
    }
    // Too large: above half the limit, with fewer deletions than the index as a whole.
    let total_fill = total_live as f64 / total_docs.max(1) as f64;
    sorted.retain(|s| !(s.size > bytes_max / 2 && s.fill > total_fill));
    if sorted.len() < segments_min {
        return Vec::new();
    }
    sorted.sort_by(|a, b| {
        a.size
            .cmp(&b.size)
            .then(b.fill.total_cmp(&a.fill))
            .then(a.at.cmp(&b.at))
    });
    let mut best: Option<(usize, usize)> = None;
    let mut best_score = f64::MIN_POSITIVE;
    for start in 0..sorted.len() {
        let mut bytes = 0u64;
        for end in start..sorted.len().min(start + segments_max) {
            bytes += sorted[end].size;
            if bytes > bytes_max {
                break;
            }
            let run = &sorted[start..=end];
            if run.len() < segments_min || too_skewed(run) {
                continue;
            }
            let score = score(run, options);
            if score < options.min_score {
                continue;
            }
            if best_score < score {
                best_score = score;
                best = Some((start, end));
            }
        }
    }
    best.map_or_else(Vec::new, |(start, end)| {
        sorted[start..=end].iter().map(|s| s.at).collect()
    })
}

/// The tier policy over the segments of an index in `dir` (their sizes are their files').
#[derive(Debug)]
pub struct TierMergePolicy {
    options: TierOptions,
    dir: PathBuf,
}

impl TierMergePolicy {
    pub fn new(options: TierOptions, dir: &Path) -> Self {
        TierMergePolicy {
            options,
            dir: dir.to_path_buf(),
        }
    }

    fn size(&self, meta: &SegmentMeta) -> SegmentSize {
        let bytes = meta
            .list_files()
            .iter()
            .filter_map(|file| std::fs::metadata(self.dir.join(file)).ok())
            .map(|m| m.len())
            .sum();
        SegmentSize {
            bytes,
            docs: meta.max_doc(),
            live_docs: meta.num_docs(),
        }
    }
}

impl MergePolicy for TierMergePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let sizes: Vec<SegmentSize> = segments.iter().map(|m| self.size(m)).collect();
        let chosen = pick(&self.options, &sizes);
        if chosen.is_empty() {
            return Vec::new();
        }
        vec![MergeCandidate(
            chosen.into_iter().map(|i| segments[i].id()).collect(),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn full(bytes: u64) -> SegmentSize {
        SegmentSize {
            bytes,
            docs: 1000,
            live_docs: 1000,
        }
    }

    fn sorted(mut picked: Vec<usize>) -> Vec<usize> {
        picked.sort_unstable();
        picked
    }

    #[test]
    fn segments_below_the_floor_merge_up_to_segments_max_at_once() {
        // Fifteen segments of 100 KiB to 1.5 MiB: all below the 2 MiB floor, so equal; the
        // ten smallest are one merge.
        let segments: Vec<SegmentSize> = (1..=15).rev().map(|i| full((i * 100) << 10)).collect();
        let picked = pick(&TierOptions::default(), &segments);
        assert_eq!(sorted(picked), (5..15).collect::<Vec<_>>());
    }

    #[test]
    fn two_or_a_large_and_a_small_segment_wait() {
        let options = TierOptions::default();
        assert!(pick(&options, &[full(MIB), full(MIB)]).is_empty());
        assert!(pick(&options, &[full(40 * MIB), full(MIB), full(MIB)]).is_empty());
        assert!(pick(&options, &[full(MIB)]).is_empty());
        assert!(pick(&options, &[]).is_empty());
    }

    #[test]
    fn similar_sizes_are_preferred_to_a_mix() {
        // Three of 10 MiB and three of 100 MiB: each triple is a candidate, a mix of the two
        // sizes is too skewed or varied; the smaller triple scores higher (smaller merge).
        let segments = [
            full(100 * MIB),
            full(10 * MIB),
            full(101 * MIB),
            full(11 * MIB),
            full(102 * MIB),
            full(12 * MIB),
        ];
        let picked = pick(&TierOptions::default(), &segments);
        assert_eq!(sorted(picked), vec![1, 3, 5]);
    }

    #[test]
    fn segments_min_holds_merges_back() {
        let options = TierOptions {
            segments_min: 5,
            ..TierOptions::default()
        };
        let four: Vec<SegmentSize> = (0..4).map(|_| full(MIB)).collect();
        assert!(pick(&options, &four).is_empty());
        let five: Vec<SegmentSize> = (0..5).map(|_| full(MIB)).collect();
        assert_eq!(sorted(pick(&options, &five)), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn segments_bytes_max_caps_a_merge_and_leaves_large_segments_alone() {
        let options = TierOptions {
            segments_bytes_max: 10 * MIB,
            ..TierOptions::default()
        };
        // Four of 3 MiB: at most three fit in 10 MiB.
        let segments: Vec<SegmentSize> = (0..4).map(|_| full(3 * MIB)).collect();
        assert_eq!(pick(&options, &segments).len(), 3);
        // Segments of 6 MiB: two exceed the limit, one alone has nothing to drop.
        let large: Vec<SegmentSize> = (0..4).map(|_| full(6 * MIB)).collect();
        assert!(pick(&options, &large).is_empty());
    }

    #[test]
    fn min_score_filters_candidates() {
        let segments: Vec<SegmentSize> = (0..3).map(|_| full(MIB)).collect();
        let some = TierOptions::default();
        assert_eq!(pick(&some, &segments).len(), 3);
        let strict = TierOptions {
            min_score: 1.0,
            ..TierOptions::default()
        };
        assert!(pick(&strict, &segments).is_empty());
    }

    #[test]
    fn a_lone_segment_with_deletions_is_merged_when_nothing_else_is() {
        let deleted = SegmentSize {
            bytes: 50 * MIB,
            docs: 1000,
            live_docs: 400,
        };
        assert_eq!(
            pick(&TierOptions::default(), &[deleted, full(MIB)]),
            vec![0]
        );
        // Three similar segments win over it.
        let picked = pick(
            &TierOptions::default(),
            &[deleted, full(MIB), full(MIB), full(MIB)],
        );
        assert_eq!(sorted(picked), vec![1, 2, 3]);
    }

    #[test]
    fn deletions_shrink_a_segment_and_segments_without_live_documents_are_skipped() {
        // 30 MiB with two thirds deleted counts as 10 MiB, like its neighbours.
        let shrunk = SegmentSize {
            bytes: 30 * MIB,
            docs: 3000,
            live_docs: 1000,
        };
        let empty = SegmentSize {
            bytes: MIB,
            docs: 10,
            live_docs: 0,
        };
        let picked = pick(
            &TierOptions::default(),
            &[shrunk, full(10 * MIB), full(10 * MIB), empty],
        );
        assert_eq!(sorted(picked), vec![0, 1, 2]);
    }

    #[test]
    fn a_bulk_load_merges_each_document_a_few_times() {
        // Sixty commits of 600 KiB, each merge done before the next commit: every document
        // is merged 3 times (the policy without its skew rule: 30 times, merging the large
        // segment again after every commit; tantivy's log merge policy: 4.3 times).
        let options = TierOptions::default();
        let commit = full(600 << 10);
        let mut segments: Vec<SegmentSize> = Vec::new();
        let mut merged_bytes = 0u64;
        for _ in 0..60 {
            segments.push(commit);
            loop {
                let mut picked = pick(&options, &segments);
                if picked.is_empty() {
                    break;
                }
                assert!((3..=10).contains(&picked.len()), "{picked:?}");
                let mut merged = full(0);
                merged.docs = 0;
                merged.live_docs = 0;
                picked.sort_unstable_by(|a, b| b.cmp(a));
                for i in picked {
                    let s = segments.remove(i);
                    merged.bytes += s.bytes;
                    merged.docs += s.docs;
                    merged.live_docs += s.live_docs;
                }
                merged_bytes += merged.bytes;
                segments.push(merged);
            }
        }
        let per_document = merged_bytes as f64 / (60 * commit.bytes) as f64;
        assert!(per_document <= 3.0, "{per_document}");
        assert!(segments.len() <= 6, "{}", segments.len());
    }
}
