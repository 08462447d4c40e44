//! A hierarchical latitude/longitude grid: the cells ArangoSearch's geo analyzers index a
//! shape under, and the coverings geo searches look up.
//!
//! Level `l` divides the sphere into `2^l` rows of `180/2^l` degrees of latitude and `2^(l+1)`
//! columns of the same width in longitude; each cell of level `l` holds exactly four cells of
//! level `l + 1`, so two cells either nest or are disjoint. A cell is half-open (its lower
//! latitude and longitude edges belong to it, the last row and column also hold their upper
//! edges), so every point lies in exactly one cell per level.
//!
//! A region is covered through its bounding [`Rect`] (which accounts for the poles and the
//! antimeridian): the finest level between the minimum and maximum level at which the
//! rectangle spans at most `max_cells` cells, every cell of it at that level. The covering
//! holds every point of the region, so a search that looks up a covering's cells finds a
//! superset of the matches; exactness comes from checking each candidate's stored shape.

use crate::shape::{Rect, Shape, ShapeKind};

/// The finest level: cells of `180/2^30` degrees (about 2 cm).
pub const MAX_LEVEL: u32 = 30;

/// Cells of a covering at most, whatever `max_cells` says: a region larger than this at the
/// minimum level is "everywhere" ([`Covering::World`]).
pub const MAX_COVERING_CELLS: u64 = 4096;

/// One cell of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    pub level: u32,
    pub row: u64,
    pub col: u64,
}

impl Cell {
    /// The cell of `level` holding the point (`lat`, `lng`) in degrees.
    pub fn of_point(level: u32, lat: f64, lng: f64) -> Cell {
        // Longitude 180 is longitude -180: the first column.
        let lng = if lng >= 180.0 { -180.0 } else { lng };
        Cell {
            level,
            row: row_of(level, lat),
            col: col_of(level, lng),
        }
    }

    /// The cell of `level` (at most this cell's level) holding this cell.
    pub fn ancestor(&self, level: u32) -> Cell {
        let shift = self.level - level.min(self.level);
        Cell {
            level: self.level - shift,
            row: self.row >> shift,
            col: self.col >> shift,
        }
    }

    /// A compact text form, unique per cell: `level/row/column` in hexadecimal.
    pub fn key(&self) -> String {
        format!("{:x}/{:x}/{:x}", self.level, self.row, self.col)
    }
}

/// How finely regions are covered (the `options` of ArangoDB's geo analyzers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoverOptions {
    /// Cells a covering should not exceed (it does at the minimum level when the region is
    /// larger than `max_cells` cells there).
    pub max_cells: u64,
    pub min_level: u32,
    pub max_level: u32,
}

impl Default for CoverOptions {
    /// ArangoDB's defaults: 20 cells, levels 4 to 23.
    fn default() -> CoverOptions {
        CoverOptions {
            max_cells: 20,
            min_level: 4,
            max_level: 23,
        }
    }
}

/// The cells holding a region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Covering {
    /// Too large to list: the region may hold any point.
    World,
    /// Cells of one level (sorted).
    Cells(Vec<Cell>),
}

/// Rows (latitude) and columns (longitude) at `level` of the grid (shared by the geo index
/// and the geo analyzers).
pub fn dims(level: u32) -> (u64, u64) {
    (1u64 << level, 1u64 << (level + 1))
}

/// The row of latitude `lat` at `level`.
pub fn row_of(level: u32, lat: f64) -> u64 {
    let (rows, _) = dims(level);
    let r = ((lat + 90.0) / 180.0 * rows as f64).floor();
    (r.max(0.0) as u64).min(rows - 1)
}

/// The column of longitude `lng` at `level`.
pub fn col_of(level: u32, lng: f64) -> u64 {
    let (_, cols) = dims(level);
    let c = ((lng + 180.0) / 360.0 * cols as f64).floor();
    (c.max(0.0) as u64).min(cols - 1)
}

/// Column ranges of a rectangle (two when it wraps across the antimeridian).
pub fn col_ranges(level: u32, rect: &Rect) -> Vec<(u64, u64)> {
    let (_, cols) = dims(level);
    if rect.lng_lo <= rect.lng_hi {
        let mut ranges = vec![(col_of(level, rect.lng_lo), col_of(level, rect.lng_hi))];
        if rect.lng_hi >= 180.0 && ranges[0].0 > 0 {
            // Points at longitude 180 are filed under -180 (`Cell::of_point`).
            ranges.push((0, 0));
        }
        ranges
    } else {
        vec![
            (col_of(level, rect.lng_lo), cols - 1),
            (0, col_of(level, rect.lng_hi)),
        ]
    }
}

/// How many cells of `level` a rectangle spans.
pub fn cells_of_rect(level: u32, rect: &Rect) -> u64 {
    let rows = row_of(level, rect.lat_hi) - row_of(level, rect.lat_lo) + 1;
    let cols: u64 = col_ranges(level, rect).iter().map(|(a, b)| b - a + 1).sum();
    rows.saturating_mul(cols)
}

impl CoverOptions {
    /// The levels clamped to the grid, minimum not above maximum.
    fn levels(&self) -> (u32, u32) {
        let max = self.max_level.min(MAX_LEVEL);
        (self.min_level.min(max), max)
    }

    /// The covering of a rectangle.
    pub fn cover_rect(&self, rect: &Rect) -> Covering {
        let (min, max) = self.levels();
        let budget = self.max_cells.max(1);
        let level = (min..=max)
            .rev()
            .find(|&l| cells_of_rect(l, rect) <= budget)
            .unwrap_or(min);
        if cells_of_rect(level, rect) > MAX_COVERING_CELLS.max(budget) {
            return Covering::World;
        }
        let mut out = Vec::new();
        for row in row_of(level, rect.lat_lo)..=row_of(level, rect.lat_hi) {
            for (a, b) in col_ranges(level, rect) {
                out.extend((a..=b).map(|col| Cell { level, row, col }));
            }
        }
        out.sort_unstable();
        out.dedup();
        Covering::Cells(out)
    }

    /// The covering of a shape: a point's cell at the maximum level, otherwise the covering
    /// of the shape's bounding rectangle.
    pub fn cover_shape(&self, shape: &Shape) -> Covering {
        if shape.kind == ShapeKind::Point {
            let (lat, lng) = shape.coords[0][0];
            return Covering::Cells(vec![Cell::of_point(self.levels().1, lat, lng)]);
        }
        self.cover_rect(&Rect::bounding(shape))
    }

    /// The covering of the spherical cap of `radius` radians around (`lat`, `lng`).
    pub fn cover_cap(&self, lat: f64, lng: f64, radius: f64) -> Covering {
        if radius >= std::f64::consts::PI {
            return self.cover_rect(&Rect::WORLD);
        }
        self.cover_rect(&Rect::around_cap(lat, lng, radius))
    }

    /// The cells from the minimum level down to `cell` that hold `cell` (`cell` included).
    pub fn ancestors(&self, cell: Cell) -> impl Iterator<Item = Cell> {
        let (min, _) = self.levels();
        (min.min(cell.level)..=cell.level).map(move |l| cell.ancestor(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::{to_lat_lng, to_vec};
    use serde_json::json;

    #[test]
    fn cells_nest_and_every_point_has_one_per_level() {
        let c = Cell::of_point(12, 48.85, 2.35);
        for l in 0..12 {
            let a = c.ancestor(l);
            assert_eq!(a, Cell::of_point(l, 48.85, 2.35));
            assert_eq!(a.ancestor(0), c.ancestor(0));
        }
        assert_eq!(
            Cell::of_point(3, 90.0, 179.0),
            Cell::of_point(3, 89.9, 179.9)
        );
        assert_eq!(
            Cell::of_point(3, 10.0, 180.0),
            Cell::of_point(3, 10.0, -180.0)
        );
        let east = Rect {
            lat_lo: 0.0,
            lat_hi: 20.0,
            lng_lo: 170.0,
            lng_hi: 180.0,
        };
        let Covering::Cells(cells) = CoverOptions::default().cover_rect(&east) else {
            panic!("a small rectangle is listed");
        };
        assert!(cells.contains(&Cell::of_point(cells[0].level, 10.0, 180.0)));
        assert_eq!(Cell::of_point(0, -90.0, -180.0).key(), "0/0/0");
    }

    #[test]
    fn shape_coverings_hold_their_vertices_and_points() {
        let options = CoverOptions::default();
        let shapes = [
            json!({"type": "Polygon", "coordinates": [[[170, 10], [-170, 10], [-170, 20], [170, 20], [170, 10]]]}),
            json!({"type": "LineString", "coordinates": [[0, 0], [40, 60]]}),
            json!({"type": "Polygon", "coordinates": [[[0, 80], [120, 80], [-120, 80], [0, 80]]]}),
        ];
        for value in shapes {
            let shape = Shape::parse(&value).unwrap();
            let Covering::Cells(cells) = options.cover_shape(&shape) else {
                panic!("{value} is small enough to list");
            };
            assert!(
                cells.len() as u64 <= options.max_cells.max(1) * 4,
                "{value}"
            );
            let level = cells[0].level;
            // Points inside (the ring's centroid) and on the shape's edges.
            let mut probes = vec![to_lat_lng(shape.centroid())];
            for line in &shape.coords {
                probes.extend(line.iter().copied());
            }
            for (lat, lng) in probes {
                if shape.is_area() || shape.coords.iter().flatten().any(|p| *p == (lat, lng)) {
                    let cell = Cell::of_point(level, lat, lng);
                    assert!(cells.contains(&cell), "{value}: ({lat}, {lng})");
                }
            }
        }
    }

    #[test]
    fn cap_coverings_hold_the_cap() {
        let options = CoverOptions {
            max_cells: 8,
            min_level: 2,
            max_level: 20,
        };
        for &(lat, lng, r) in &[(0.0, 179.9, 0.01), (89.0, 10.0, 0.05), (-30.0, -60.0, 0.3)] {
            let Covering::Cells(cells) = options.cover_cap(lat, lng, r) else {
                panic!("a cap of {r} rad is listed");
            };
            let centre = to_vec(lat, lng);
            let level = cells[0].level;
            for i in 0..360 {
                for f in [0.25, 0.5, 0.99] {
                    // Points on circles around the centre within the cap.
                    let bearing = f64::from(i).to_radians();
                    let d = r * f;
                    let (plat, plng) = (lat.to_radians(), lng.to_radians());
                    let qlat = (plat.sin() * d.cos() + plat.cos() * d.sin() * bearing.cos()).asin();
                    let qlng = plng
                        + (bearing.sin() * d.sin() * plat.cos())
                            .atan2(d.cos() - plat.sin() * qlat.sin());
                    let q = to_vec(qlat.to_degrees(), qlng.to_degrees());
                    let (qlat, qlng) = to_lat_lng(q);
                    assert!(crate::shape::angle(q, centre) <= r * 1.000_001);
                    assert!(
                        cells.contains(&Cell::of_point(level, qlat, qlng)),
                        "cap ({lat}, {lng}, {r}) misses ({qlat}, {qlng})"
                    );
                }
            }
        }
        assert_eq!(
            options.cover_cap(0.0, 0.0, 4.0),
            options.cover_rect(&Rect::WORLD)
        );
    }

    #[test]
    fn huge_regions_are_the_world() {
        let options = CoverOptions {
            max_cells: 20,
            min_level: 10,
            max_level: 20,
        };
        assert_eq!(options.cover_rect(&Rect::WORLD), Covering::World);
        let Covering::Cells(cells) = CoverOptions::default().cover_rect(&Rect::WORLD) else {
            panic!("level 4 lists the world in 512 cells");
        };
        assert_eq!(cells.len(), 512);
    }
}
