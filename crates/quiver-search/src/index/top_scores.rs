//! The best k matches by their scores (`SORT BM25(d) DESC LIMIT k` answered inside the index):
//! the order AQL's stable SORT gives the full list of hits, kept in a bounded heap.
//!
//! Scores compare as AQL compares the numbers a scorer variable holds: a finite score is a
//! number, a non-finite one is `null` (which sorts before every number); equal scores keep the
//! order of the full search's hits (segment by segment, documents ascending), as a stable sort
//! of that list does.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::view_index::Hit;

/// The sort keys: (index into the requested scorers, ascending), first key first.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoreOrder {
    pub keys: Vec<(usize, bool)>,
}

impl ScoreOrder {
    /// Compares two score lists (one score per requested scorer) by the keys.
    pub fn compare(&self, a: &[f64], b: &[f64]) -> Ordering {
        for &(index, ascending) in &self.keys {
            let order = compare_score(a.get(index).copied(), b.get(index).copied());
            if order != Ordering::Equal {
                return if ascending { order } else { order.reverse() };
            }
        }
        Ordering::Equal
    }

    /// The first `k` of `hits` in this order, equal scores in their order in `hits`: what a
    /// stable sort of every hit followed by a cut at `k` gives.
    pub fn best(&self, mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
        hits.sort_by(|a, b| self.compare(&a.scores, &b.scores));
        hits.truncate(k);
        hits
    }
}

/// AQL's order of the values `Number::from_f64(score)` gives: non-finite scores are `null`,
/// below every number; numbers by value.
fn compare_score(a: Option<f64>, b: Option<f64>) -> Ordering {
    let value = |s: Option<f64>| s.filter(|x| x.is_finite());
    match (value(a), value(b)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// One candidate: its scores and its place in the full hit list.
struct Candidate<'a> {
    order: &'a ScoreOrder,
    scores: Vec<f64>,
    /// (segment ordinal, document id): the order of the full search's hits.
    place: (u32, u32),
}

impl Candidate<'_> {
    /// Less is better (comes first).
    fn rank(&self, scores: &[f64], place: (u32, u32)) -> Ordering {
        self.order
            .compare(&self.scores, scores)
            .then(self.place.cmp(&place))
    }
}

impl PartialEq for Candidate<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate<'_> {}

impl PartialOrd for Candidate<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank(&other.scores, other.place)
    }
}

/// The best `k` candidates offered so far; the heap's top is the worst kept one.
pub(super) struct BestScores<'a> {
    order: &'a ScoreOrder,
    k: usize,
    heap: BinaryHeap<Candidate<'a>>,
}

impl<'a> BestScores<'a> {
    pub fn new(order: &'a ScoreOrder, k: usize) -> BestScores<'a> {
        BestScores {
            order,
            k,
            // The heap grows with what is kept, never beyond k + 1 entries.
            heap: BinaryHeap::with_capacity(k.min(4096) + 1),
        }
    }

    /// Offers the document at `place` with `scores`; they are copied only when it is kept.
    pub fn offer(&mut self, scores: &[f64], place: (u32, u32)) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() == self.k {
            let worst = self.heap.peek().expect("k > 0 entries");
            // Kept only when better than the worst kept one (ties: the earlier place wins,
            // and places only grow while offering in hit order, but the rank decides anyway).
            if worst.rank(scores, place) != Ordering::Greater {
                return;
            }
            self.heap.pop();
        }
        self.heap.push(Candidate {
            order: self.order,
            scores: scores.to_vec(),
            place,
        });
    }

    /// The kept candidates, best first: (place, scores).
    pub fn into_sorted(self) -> Vec<((u32, u32), Vec<f64>)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|c| (c.place, c.scores))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_keeps_what_a_stable_sort_keeps() {
        // Scores with many ties and non-finite values, in hit order.
        let scores: Vec<Vec<f64>> = (0..200u32)
            .map(|i| {
                let first = match i % 11 {
                    0 => f64::NAN,
                    1 => f64::INFINITY,
                    n => f64::from(n % 4),
                };
                vec![first, f64::from(i % 3)]
            })
            .collect();
        let orders = [
            vec![(0, false)],
            vec![(0, true)],
            vec![(0, false), (1, true)],
            vec![(1, true), (0, false)],
        ];
        for keys in orders {
            let order = ScoreOrder { keys };
            for k in [0usize, 1, 5, 37, 199, 200, 500] {
                let mut best = BestScores::new(&order, k);
                for (i, s) in scores.iter().enumerate() {
                    best.offer(s, (i as u32 / 50, i as u32 % 50));
                }
                let got: Vec<u32> = best
                    .into_sorted()
                    .into_iter()
                    .map(|(p, _)| p.0 * 50 + p.1)
                    .collect();
                let mut all: Vec<u32> = (0..200).collect();
                all.sort_by(|a, b| order.compare(&scores[*a as usize], &scores[*b as usize]));
                all.truncate(k);
                assert_eq!(got, all, "{:?} k={k}", order.keys);
            }
        }
    }
}
