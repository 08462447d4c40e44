//! The operator of a geo `IndexNode` (rule `geo-index-optimizer`). Per input row it asks the
//! geo index for candidates and keeps those that pass the very expressions the optimizer took
//! out of the query (distance bounds, `GEO_CONTAINS`/`GEO_INTERSECTS`), so the answer is the
//! filter's.
//!
//! Sorted output comes in rings: caps of radius 1 km, 4 km, 16 km, … around the reference
//! point. Every document within a cap's radius is among that cap's candidates, so after a
//! round all documents up to that distance are known; the round emits those beyond the
//! previous radius, in distance order. A `LIMIT 10` therefore stops after the first rounds
//! that hold ten documents, and the number of rounds is bounded (the radius quadruples up to
//! half the globe). Without the index (a source that cannot use it, or while it is still
//! being built) the operator scans the collection once and applies the same checks.

use std::collections::VecDeque;

use quiver_core::geo::{self, Rect, Shape};
use quiver_errors::Result;
use serde_json::Value;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::{GeoOrigin, GeoSearch, IndexScan};
use crate::value::{compare, to_bool};

/// First ring radius, in metres.
const FIRST_RING_M: f64 = 1_000.0;

/// A cap is fetched this much wider than its radius so that rounding in the cap's rectangle
/// never drops a document lying exactly on the radius.
const CAP_SLACK: f64 = 1.0 + 1e-9;

/// Where the current input row's search stands.
enum Progress {
    /// Sorted: the next ring's radius (radians) and the last emitted radius (metres).
    Rings {
        radius: f64,
        done_m: Option<f64>,
    },
    Finished,
}

struct RowSearch {
    centre: Option<(f64, f64)>,
    lower: Option<(Value, bool)>,
    upper: Option<(Value, bool)>,
    progress: Progress,
}

pub(super) struct GeoScanOp {
    input: Op,
    scan: IndexScan,
    search: GeoSearch,
    row: Option<Row>,
    state: Option<RowSearch>,
    buffer: VecDeque<Value>,
}

impl GeoScanOp {
    pub fn new(input: Op, mut scan: IndexScan) -> GeoScanOp {
        let search = scan.geo.take().map(|g| *g).unwrap_or(GeoSearch {
            distance: None,
            sort: false,
            lower: None,
            upper: None,
            shape_filters: Vec::new(),
            region: None,
        });
        GeoScanOp {
            input,
            scan,
            search,
            row: None,
            state: None,
            buffer: VecDeque::new(),
        }
    }

    fn centre(&self, ctx: &mut ExecCtx, row: &Row) -> Result<Option<(f64, f64)>> {
        let Some((_, origin)) = &self.search.distance else {
            return Ok(None);
        };
        let centre = match origin {
            GeoOrigin::LatLng(a, b) => {
                match (ctx.eval(a, row)?.as_f64(), ctx.eval(b, row)?.as_f64()) {
                    (Some(lat), Some(lng)) => Some((lat, lng)),
                    _ => None,
                }
            }
            GeoOrigin::Shape(e) => Shape::parse(&ctx.eval(e, row)?)
                .ok()
                .map(|s| geo::to_lat_lng(s.centroid())),
        };
        // A centre off the globe cannot bound a cap: such a row is answered by a scan.
        Ok(centre.filter(|(lat, lng)| (-90.0..=90.0).contains(lat) && lng.is_finite()))
    }

    /// The distance of `doc` when it passes every served condition, else None. Documents
    /// without a numeric distance are never produced when a distance is involved (they are
    /// not in the index either).
    fn accept(
        &self,
        ctx: &mut ExecCtx,
        row: &Row,
        state: &RowSearch,
        doc: Value,
    ) -> Result<Option<(f64, Value)>> {
        let mut r = row.clone();
        r[self.scan.out] = doc;
        let mut d = 0.0;
        if let Some((expr, _)) = &self.search.distance {
            let value = ctx.eval(expr, &r)?;
            let Some(x) = value.as_f64().filter(|x| x.is_finite()) else {
                return Ok(None);
            };
            if let Some((bound, inclusive)) = &state.lower {
                let ord = compare(&value, bound);
                if !(ord.is_gt() || *inclusive && ord.is_eq()) {
                    return Ok(None);
                }
            }
            if let Some((bound, inclusive)) = &state.upper {
                let ord = compare(&value, bound);
                if !(ord.is_lt() || *inclusive && ord.is_eq()) {
                    return Ok(None);
                }
            }
            d = x;
        }
        for f in &self.search.shape_filters {
            if !to_bool(&ctx.eval(f, &r)?) {
                return Ok(None);
            }
        }
        let doc = std::mem::take(&mut r[self.scan.out]);
        Ok(Some((d, doc)))
    }

    /// Candidates for `rect` through the index, or None when the source cannot use it.
    fn lookup(&self, ctx: &mut ExecCtx, rect: &Rect) -> Result<Option<Vec<Value>>> {
        ctx.txn
            .geo_lookup(&self.scan.collection, self.scan.index.id, rect)
    }

    fn scan_all(&self, ctx: &mut ExecCtx) -> Result<Vec<Value>> {
        ctx.txn.scan(&self.scan.collection)?.collect()
    }

    /// Checks `docs`, keeps those in (done_m, limit_m] (when given), and appends them to the
    /// buffer, in distance order when sorting.
    fn emit(
        &mut self,
        ctx: &mut ExecCtx,
        row: &Row,
        state: &RowSearch,
        docs: Vec<Value>,
        done_m: Option<f64>,
        limit_m: Option<f64>,
    ) -> Result<()> {
        let mut kept: Vec<(f64, String, Value)> = Vec::new();
        for doc in docs {
            ctx.check()?;
            ctx.stats.scanned_index += 1;
            let Some((d, doc)) = self.accept(ctx, row, state, doc)? else {
                continue;
            };
            if done_m.is_some_and(|m| d <= m) || limit_m.is_some_and(|m| d > m) {
                continue;
            }
            let key = doc
                .get("_key")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            kept.push((d, key, doc));
        }
        if self.search.sort {
            // Ties by key: the order does not depend on the index's cell layout.
            kept.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        }
        self.buffer.extend(kept.into_iter().map(|(_, _, doc)| doc));
        Ok(())
    }

    /// Starts the search for a new input row: unsorted searches are answered at once.
    fn start(&mut self, ctx: &mut ExecCtx, row: &Row) -> Result<RowSearch> {
        let eval_bound = |ctx: &mut ExecCtx, b: &Option<(crate::expr::CExpr, bool)>| {
            b.as_ref()
                .map(|(e, incl)| ctx.eval(e, row).map(|v| (v, *incl)))
                .transpose()
        };
        let lower = eval_bound(ctx, &self.search.lower)?;
        let upper = eval_bound(ctx, &self.search.upper)?;
        let centre = self.centre(ctx, row)?;
        let mut state = RowSearch {
            centre,
            lower,
            upper,
            progress: Progress::Finished,
        };
        if self.search.sort && centre.is_some() {
            state.progress = Progress::Rings {
                radius: FIRST_RING_M / geo::EARTH_RADIUS_M,
                done_m: None,
            };
            return Ok(state);
        }
        // One lookup: the region's bounding rectangle, else the cap of the upper bound.
        let rect = match &self.search.region {
            Some(e) => match Shape::parse(&ctx.eval(e, row)?) {
                Ok(shape) => Some(Rect::bounding(&shape)),
                // An invalid shape matches nothing (the filter would warn and be null).
                Err(_) => return Ok(state),
            },
            None => match (centre, state.upper.as_ref().and_then(|(v, _)| v.as_f64())) {
                (Some((lat, lng)), Some(r)) if r >= 0.0 => Some(Rect::around_cap(
                    lat,
                    lng,
                    (r / geo::EARTH_RADIUS_M * CAP_SLACK).min(std::f64::consts::PI),
                )),
                _ => None,
            },
        };
        let docs = match rect {
            Some(rect) => match self.lookup(ctx, &rect)? {
                Some(docs) => docs,
                None => self.scan_all(ctx)?,
            },
            None => self.scan_all(ctx)?,
        };
        self.emit(ctx, row, &state, docs, None, None)?;
        Ok(state)
    }

    /// Runs sorted rounds until one yields documents or the search is finished.
    fn next_ring(&mut self, ctx: &mut ExecCtx, row: &Row, state: &mut RowSearch) -> Result<()> {
        while self.buffer.is_empty() {
            let Progress::Rings { radius, done_m } = state.progress else {
                return Ok(());
            };
            let Some((lat, lng)) = state.centre else {
                state.progress = Progress::Finished;
                return Ok(());
            };
            let whole = radius >= std::f64::consts::PI;
            let rect = if whole {
                Rect::WORLD
            } else {
                Rect::around_cap(lat, lng, radius * CAP_SLACK)
            };
            let (docs, whole) = match self.lookup(ctx, &rect)? {
                Some(docs) => (docs, whole),
                None => (self.scan_all(ctx)?, true),
            };
            let limit_m = radius * geo::EARTH_RADIUS_M;
            self.emit(ctx, row, state, docs, done_m, (!whole).then_some(limit_m))?;
            // Past the upper bound nothing more can pass.
            let beyond_upper = state
                .upper
                .as_ref()
                .and_then(|(v, _)| v.as_f64())
                .is_some_and(|u| limit_m >= u);
            state.progress = if whole || beyond_upper {
                Progress::Finished
            } else {
                Progress::Rings {
                    radius: (radius * 4.0).min(std::f64::consts::PI),
                    done_m: Some(limit_m),
                }
            };
        }
        Ok(())
    }
}

impl Operator for GeoScanOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(doc) = self.buffer.pop_front() {
                if let Some(row) = &self.row {
                    let mut r = row.clone();
                    r[self.scan.out] = doc;
                    return Ok(Some(r));
                }
            }
            if let (Some(row), Some(mut state)) = (self.row.clone(), self.state.take()) {
                if matches!(state.progress, Progress::Rings { .. }) {
                    self.next_ring(ctx, &row, &mut state)?;
                    self.state = Some(state);
                    if !self.buffer.is_empty() {
                        continue;
                    }
                }
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    self.buffer.clear();
                    let state = self.start(ctx, &row)?;
                    self.row = Some(row);
                    self.state = Some(state);
                }
                None => return Ok(None),
            }
        }
    }
}
