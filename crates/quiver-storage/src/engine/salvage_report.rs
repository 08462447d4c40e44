//! The salvage report: what a start with `--database.ignore-datafile-errors` kept and lost.
//! Recovery notes each salvage as it happens (logged at error level at once); at the end of
//! `open` the notes are written into `salvage-report-<unix ms>.txt` in the database
//! directory, so the operator has one place that names every damaged file.
//!
//! Invariant: notes are only taken while the engine opens (bounded by the number of files).

use std::path::PathBuf;

use super::Inner;

impl Inner {
    /// Records (and logs) one salvage decision for the report.
    pub(super) fn note_salvage(&self, note: String) {
        tracing::error!("salvage: {note}");
        self.salvage_notes.lock().push(note);
    }

    /// Writes the report if anything was salvaged; returns its path.
    pub(super) fn write_salvage_report(&self) -> Option<PathBuf> {
        let notes = std::mem::take(&mut *self.salvage_notes.lock());
        if notes.is_empty() {
            return None;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let path = self.dir.join(format!("salvage-report-{now}.txt"));
        let mut text = format!(
            "QuiverDB started with --database.ignore-datafile-errors and salvaged damaged \
             files in {}.\nEvery intact marker was kept; what each damaged range held is \
             lost.\n\n",
            self.dir.display()
        );
        for note in &notes {
            text.push_str("- ");
            text.push_str(note);
            text.push('\n');
        }
        match std::fs::write(&path, text) {
            Ok(()) => {
                tracing::error!(
                    "salvaged {} damaged file(s); report written to {}",
                    notes.len(),
                    path.display()
                );
                Some(path)
            }
            Err(e) => {
                tracing::error!("cannot write the salvage report {}: {e}", path.display());
                None
            }
        }
    }
}
