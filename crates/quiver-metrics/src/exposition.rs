//! The Prometheus text exposition format (version 0.0.4), as ArangoDB's `/_admin/metrics`
//! writes it: for every metric a `# HELP` and a `# TYPE` line, then its samples; histograms
//! as cumulative `_bucket{le="…"}` lines ending with `+Inf`, then `_sum` and `_count`.

use std::collections::HashSet;
use std::fmt::Write;

/// One histogram's state: counts per bucket (not cumulative, `+Inf` last).
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    /// Finite upper bounds, ascending.
    pub bounds: Vec<f64>,
    /// One count per bound, then the `+Inf` bucket.
    pub counts: Vec<u64>,
    /// Samples in all.
    pub count: u64,
    /// Sum of the samples.
    pub sum: f64,
}

/// A metrics page being written.
#[derive(Default)]
pub struct Exposition {
    text: String,
    names: HashSet<&'static str>,
}

/// A metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A sample value: integers without a fraction, `+Inf`/`-Inf`/`NaN` spelled as the format
/// wants them.
fn number(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v}");
    }
}

impl Exposition {
    /// An empty page.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    fn header(&mut self, name: &'static str, help: &str, kind: &str) {
        assert!(valid_name(name), "invalid metric name {name:?}");
        assert!(self.names.insert(name), "metric {name} written twice");
        assert!(
            !help.contains('\n') && !help.contains('\\'),
            "HELP text of {name} needs no escaping"
        );
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// A counter (only ever grows).
    pub fn counter(&mut self, name: &'static str, help: &str, value: f64) {
        self.header(name, help, "counter");
        self.text.push_str(name);
        self.text.push(' ');
        number(&mut self.text, value);
        self.text.push('\n');
    }

    /// A gauge (goes up and down).
    pub fn gauge(&mut self, name: &'static str, help: &str, value: f64) {
        self.header(name, help, "gauge");
        self.text.push_str(name);
        self.text.push(' ');
        number(&mut self.text, value);
        self.text.push('\n');
    }

    /// A histogram, its buckets written cumulatively.
    pub fn histogram(&mut self, name: &'static str, help: &str, h: &HistogramSnapshot) {
        assert_eq!(
            h.counts.len(),
            h.bounds.len() + 1,
            "histogram {name}: one count per bound and +Inf"
        );
        self.header(name, help, "histogram");
        let mut cumulative = 0u64;
        for (i, count) in h.counts.iter().enumerate() {
            cumulative += count;
            let _ = write!(self.text, "{name}_bucket{{le=\"");
            match h.bounds.get(i) {
                Some(bound) => number(&mut self.text, *bound),
                None => self.text.push_str("+Inf"),
            }
            let _ = writeln!(self.text, "\"}} {cumulative}");
        }
        assert_eq!(
            cumulative, h.count,
            "histogram {name}: +Inf bucket is the count"
        );
        let _ = write!(self.text, "{name}_sum ");
        number(&mut self.text, h.sum);
        let _ = writeln!(self.text, "\n{name}_count {}", h.count);
    }

    /// The page.
    pub fn finish(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_has_help_type_and_cumulative_buckets() {
        let mut e = Exposition::new();
        e.counter("x_total", "Things done", 3.0);
        e.gauge("y", "Level", 0.5);
        e.histogram(
            "z",
            "Sizes",
            &HistogramSnapshot {
                bounds: vec![1.0, 2.5],
                counts: vec![1, 2, 3],
                count: 6,
                sum: 12.0,
            },
        );
        assert_eq!(
            e.finish(),
            "# HELP x_total Things done\n# TYPE x_total counter\nx_total 3\n\
             # HELP y Level\n# TYPE y gauge\ny 0.5\n\
             # HELP z Sizes\n# TYPE z histogram\nz_bucket{le=\"1\"} 1\nz_bucket{le=\"2.5\"} 3\n\
             z_bucket{le=\"+Inf\"} 6\nz_sum 12\nz_count 6\n"
        );
    }

    #[test]
    #[should_panic(expected = "written twice")]
    fn a_name_is_written_once() {
        let mut e = Exposition::new();
        e.gauge("a", "A", 1.0);
        e.gauge("a", "A", 1.0);
    }

    #[test]
    #[should_panic(expected = "invalid metric name")]
    fn names_are_checked() {
        Exposition::new().gauge("9a", "A", 1.0);
    }
}
