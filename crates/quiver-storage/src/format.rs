//! The on-disk marker format (documented byte by byte in docs/storage-format.md).
//!
//! Every file (WAL segment, journal, datafile, compaction file) is a sequence of markers, each
//! starting at an 8-byte aligned offset with a 24-byte header:
//!
//! ```text
//! 0  len u32      unpadded marker length including the header
//! 4  crc u32      CRC32C over bytes 0..4 and 8..len
//! 8  type u8
//! 9  flags u8     bit 0 = COMMIT (last marker of an atomic batch), bit 1 = SYNC (WAL)
//! 10 reserved u16 (0)
//! 12 claim u32    WAL durability claim (see finish_wal_marker)
//! 16 tick u64
//! 24 body
//! ```

/// Version of the marker and file layout written by this build.
pub const FORMAT_VERSION: u32 = 1;
/// Magic number at the start of every file header body ("QVDB").
pub const MAGIC: u32 = 0x4244_5651;
/// Size of the marker header.
pub const HEADER_LEN: usize = 24;
/// Markers start at multiples of this.
pub const ALIGN: usize = 8;
/// Largest marker accepted (2 GiB - 1): offsets and lengths fit in u32.
pub const MAX_MARKER_LEN: usize = (1 << 31) - 1;
/// Length of the file header marker.
pub const FILE_HEADER_LEN: usize = HEADER_LEN + 48;
/// Length of the footer marker.
pub const FOOTER_LEN: usize = HEADER_LEN + 24;
/// Longest key the engine stores.
pub const MAX_KEY_LEN: usize = 254;

/// Flag: this marker ends an atomic batch.
pub const FLAG_COMMIT: u8 = 1;
/// Flag (WAL, on the `COMMIT` marker only): the batch's writer waits for an fdatasync covering
/// it before the write is acknowledged. Recovery uses it to recognise that damage *before* an
/// intact sync batch may be damage to synced data (the fdatasync that acknowledged the batch
/// flushed everything before it), which the durability claims alone cannot show for the newest
/// sync batches: nothing written after them vouches for them.
pub const FLAG_SYNC: u8 = 2;

/// Marker types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MarkerType {
    /// First marker of every file.
    FileHeader = 1,
    /// Last marker of a sealed file.
    Footer = 2,
    /// A document version (documents and edges alike: bodies are opaque).
    Document = 10,
    /// A document removal (tombstone).
    Remove = 11,
    /// A collection truncate: every document version of the collection with a lower tick
    /// is gone (one marker instead of a removal per document).
    Truncate = 12,
}

impl MarkerType {
    /// Parses a type byte.
    pub fn from_u8(value: u8) -> Option<MarkerType> {
        match value {
            1 => Some(MarkerType::FileHeader),
            2 => Some(MarkerType::Footer),
            10 => Some(MarkerType::Document),
            11 => Some(MarkerType::Remove),
            12 => Some(MarkerType::Truncate),
            _ => None,
        }
    }
}

/// What kind of file a header describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FileKind {
    /// A WAL segment.
    Wal = 1,
    /// A collection journal or (once sealed) datafile.
    Journal = 2,
    /// A compaction result.
    Compaction = 3,
}

/// Rounds a marker length up to the alignment.
pub fn padded(len: usize) -> usize {
    (len + ALIGN - 1) & !(ALIGN - 1)
}

fn marker_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&bytes[0..4]);
    crc32c::crc32c_append(crc, &bytes[8..])
}

/// Writes a header for a marker of `len` unpadded bytes at the start of `out` (which must
/// hold the complete marker) and fills in the CRC.
pub fn finish_marker(out: &mut [u8], kind: MarkerType, flags: u8, tick: u64) {
    finish_wal_marker(out, kind, flags, tick, 0);
}

/// Like [`finish_marker`], recording in header bytes 12..16 that every tick up to `durable`
/// was on stable storage when this marker was written (`0` = no claim). Stored as
/// `tick - durable + 1` (saturated, which only weakens the claim). Recovery uses these claims
/// to tell a power-loss hole in the unsynced tail of the WAL (no later marker claims the hole
/// was durable) from damage to synced data (a later marker does).
pub fn finish_wal_marker(out: &mut [u8], kind: MarkerType, flags: u8, tick: u64, durable: u64) {
    let len = out.len() as u32;
    out[0..4].copy_from_slice(&len.to_le_bytes());
    out[8] = kind as u8;
    out[9] = flags;
    out[10..12].fill(0);
    let claim: u32 = if durable == 0 || durable > tick {
        0
    } else {
        (tick - durable).min(u32::MAX as u64 - 1) as u32 + 1
    };
    out[12..16].copy_from_slice(&claim.to_le_bytes());
    out[16..24].copy_from_slice(&tick.to_le_bytes());
    let crc = marker_crc(out);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// The highest durability claim of any valid marker at an aligned offset in `buf[from..]`.
pub fn max_claim_from(buf: &[u8], from: usize) -> u64 {
    let mut best = 0;
    let mut at = padded(from);
    while at + HEADER_LEN <= buf.len() {
        match decode(&buf[at..]) {
            Ok(m) => {
                if let Some(c) = durable_claim(&buf[at..]) {
                    best = best.max(c);
                }
                at += padded(m.len);
            }
            Err(_) => at += ALIGN,
        }
    }
    best
}

/// Whether any valid `COMMIT` marker at an aligned offset in `buf[from..]` carries
/// [`FLAG_SYNC`] (an intact sync batch behind a damaged spot).
pub fn sync_commit_from(buf: &[u8], from: usize) -> bool {
    let mut at = padded(from);
    while at + HEADER_LEN <= buf.len() {
        match decode(&buf[at..]) {
            Ok(m) => {
                if m.flags & FLAG_COMMIT != 0 && m.flags & FLAG_SYNC != 0 {
                    return true;
                }
                at += padded(m.len);
            }
            Err(_) => at += ALIGN,
        }
    }
    false
}

/// The durability claim of a valid marker at the start of `buf` (see [`finish_wal_marker`]):
/// every tick up to the returned one was durable when it was written.
pub fn durable_claim(buf: &[u8]) -> Option<u64> {
    let m = decode(buf).ok()?;
    let field = u32::from_le_bytes(buf.get(12..16)?.try_into().ok()?);
    (field > 0).then(|| m.tick.saturating_sub(field as u64 - 1))
}

/// Appends a data marker (document or removal) without tick and CRC (see
/// [`finish_marker`]); returns its unpadded length. Padding bytes are appended too.
pub fn encode_data(
    out: &mut Vec<u8>,
    _kind: MarkerType,
    cid: u64,
    rev: u64,
    key: &str,
    body: &[u8],
) -> usize {
    let start = out.len();
    out.resize(start + HEADER_LEN, 0);
    out.extend_from_slice(&cid.to_le_bytes());
    out.extend_from_slice(&rev.to_le_bytes());
    out.push(key.len() as u8);
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(body);
    let len = out.len() - start;
    out.resize(start + padded(len), 0);
    len
}

/// Encodes a complete data marker (tests, compaction).
pub fn data_marker(
    kind: MarkerType,
    flags: u8,
    tick: u64,
    cid: u64,
    rev: u64,
    key: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::new();
    let len = encode_data(&mut out, kind, cid, rev, key, body);
    finish_marker(&mut out[..len], kind, flags, tick);
    out
}

/// Length of a truncate marker (header, collection id, revision).
pub const TRUNCATE_LEN: usize = HEADER_LEN + 16;

/// Appends a truncate marker without tick and CRC (see [`finish_marker`]); returns its
/// unpadded length.
pub fn encode_truncate(out: &mut Vec<u8>, cid: u64, rev: u64) -> usize {
    let start = out.len();
    out.resize(start + HEADER_LEN, 0);
    out.extend_from_slice(&cid.to_le_bytes());
    out.extend_from_slice(&rev.to_le_bytes());
    let len = out.len() - start;
    out.resize(start + padded(len), 0);
    len
}

/// Encodes a complete truncate marker (tests).
pub fn truncate_marker(flags: u8, tick: u64, cid: u64, rev: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let len = encode_truncate(&mut out, cid, rev);
    finish_marker(&mut out[..len], MarkerType::Truncate, flags, tick);
    out
}

/// The body of a file header marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Format version of the file.
    pub version: u32,
    /// What the file is.
    pub kind: FileKind,
    /// The file's id.
    pub fid: u64,
    /// The owning collection (0 for WAL segments).
    pub cid: u64,
    /// Allocated size of the file.
    pub size: u64,
    /// Creation time, ms since the Unix epoch.
    pub created_ms: u64,
}

/// Encodes a file header marker (padded).
pub fn file_header(header: &FileHeader, tick: u64) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_LEN];
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&header.version.to_le_bytes());
    out.push(header.kind as u8);
    out.extend_from_slice(&[0u8; 7]);
    out.extend_from_slice(&header.fid.to_le_bytes());
    out.extend_from_slice(&header.cid.to_le_bytes());
    out.extend_from_slice(&header.size.to_le_bytes());
    out.extend_from_slice(&header.created_ms.to_le_bytes());
    debug_assert_eq!(out.len(), FILE_HEADER_LEN);
    finish_marker(&mut out, MarkerType::FileHeader, 0, tick);
    out
}

/// The body of a footer marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// Data markers in the file.
    pub count: u64,
    /// Highest tick in the file.
    pub max_tick: u64,
    /// CRC32C over the little-endian CRCs of every marker before the footer.
    pub crc_of_crcs: u32,
}

/// Encodes a footer marker (padded).
pub fn footer(footer: &Footer, tick: u64) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_LEN];
    out.extend_from_slice(&footer.count.to_le_bytes());
    out.extend_from_slice(&footer.max_tick.to_le_bytes());
    out.extend_from_slice(&footer.crc_of_crcs.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    finish_marker(&mut out, MarkerType::Footer, 0, tick);
    out
}

/// A decoded marker borrowed from a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker<'a> {
    /// Type.
    pub kind: MarkerType,
    /// Flags.
    pub flags: u8,
    /// Tick.
    pub tick: u64,
    /// Stored CRC.
    pub crc: u32,
    /// Unpadded length.
    pub len: usize,
    /// Body (after the header).
    pub body: &'a [u8],
}

/// Why a marker could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// A zero length: the end of written data.
    End,
    /// Too few bytes for the header or the announced length.
    Truncated,
    /// Length, type or body layout invalid.
    Invalid,
    /// Checksum mismatch.
    Checksum,
}

/// Decodes the marker at the start of `buf`.
pub fn decode(buf: &[u8]) -> Result<Marker<'_>, DecodeError> {
    decode_checked(buf, true)
}

/// Like [`decode`] but without comparing the CRC: only for markers whose CRC was already
/// verified (a sealed datafile, see `DataFile::verified_sealed`, or a marker [`scan`] just
/// found in the same image).
/// Lengths and types are still validated, so a wrong offset is an error, never a panic.
pub fn decode_trusted(buf: &[u8]) -> Result<Marker<'_>, DecodeError> {
    decode_checked(buf, false)
}

fn decode_checked(buf: &[u8], check_crc: bool) -> Result<Marker<'_>, DecodeError> {
    if buf.len() < 4 {
        return if buf.iter().all(|&b| b == 0) {
            Err(DecodeError::End)
        } else {
            Err(DecodeError::Truncated)
        };
    }
    let len = u32::from_le_bytes(buf[0..4].try_into().unwrap_or_default()) as usize;
    if len == 0 {
        return Err(DecodeError::End);
    }
    if buf.len() < HEADER_LEN {
        return Err(DecodeError::Truncated);
    }
    if !(HEADER_LEN..=MAX_MARKER_LEN).contains(&len) {
        return Err(DecodeError::Invalid);
    }
    if buf.len() < len {
        return Err(DecodeError::Truncated);
    }
    let bytes = &buf[..len];
    let crc = u32::from_le_bytes(bytes[4..8].try_into().unwrap_or_default());
    if check_crc && marker_crc(bytes) != crc {
        return Err(DecodeError::Checksum);
    }
    let kind = MarkerType::from_u8(bytes[8]).ok_or(DecodeError::Invalid)?;
    let tick = u64::from_le_bytes(bytes[16..24].try_into().unwrap_or_default());
    Ok(Marker {
        kind,
        flags: bytes[9],
        tick,
        crc,
        len,
        body: &bytes[HEADER_LEN..],
    })
}

/// A decoded document or removal body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataBody<'a> {
    /// Collection id.
    pub cid: u64,
    /// Revision.
    pub rev: u64,
    /// Key.
    pub key: &'a str,
    /// Offset of the document bytes inside the marker (from its start).
    pub doc_offset: usize,
    /// Document bytes (empty for removals).
    pub doc: &'a [u8],
}

/// Parses the body of a document or removal marker.
pub fn data_body<'a>(marker: &Marker<'a>) -> Result<DataBody<'a>, DecodeError> {
    let b = marker.body;
    if b.len() < 17 {
        return Err(DecodeError::Invalid);
    }
    let cid = u64::from_le_bytes(b[0..8].try_into().unwrap_or_default());
    let rev = u64::from_le_bytes(b[8..16].try_into().unwrap_or_default());
    let key_len = b[16] as usize;
    if key_len == 0 || b.len() < 17 + key_len {
        return Err(DecodeError::Invalid);
    }
    let key = std::str::from_utf8(&b[17..17 + key_len]).map_err(|_| DecodeError::Invalid)?;
    let doc = &b[17 + key_len..];
    if marker.kind == MarkerType::Remove && !doc.is_empty() {
        return Err(DecodeError::Invalid);
    }
    Ok(DataBody {
        cid,
        rev,
        key,
        doc_offset: HEADER_LEN + 17 + key_len,
        doc,
    })
}

/// A decoded truncate body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruncateBody {
    /// Collection id.
    pub cid: u64,
    /// Revision of the truncate (observed by the clock at recovery).
    pub rev: u64,
}

/// Parses the body of a truncate marker.
pub fn truncate_body(marker: &Marker<'_>) -> Result<TruncateBody, DecodeError> {
    let b = marker.body;
    if marker.kind != MarkerType::Truncate || b.len() != 16 {
        return Err(DecodeError::Invalid);
    }
    Ok(TruncateBody {
        cid: u64::from_le_bytes(b[0..8].try_into().unwrap_or_default()),
        rev: u64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
    })
}

/// The collection and revision of a data marker (document, removal or truncate) whose body
/// parses; `None` for file headers, footers and malformed bodies.
pub fn marker_owner(marker: &Marker<'_>) -> Option<(u64, u64)> {
    match marker.kind {
        MarkerType::Document | MarkerType::Remove => data_body(marker).ok().map(|b| (b.cid, b.rev)),
        MarkerType::Truncate => truncate_body(marker).ok().map(|b| (b.cid, b.rev)),
        MarkerType::FileHeader | MarkerType::Footer => None,
    }
}

/// Parses a file header body.
pub fn parse_file_header(marker: &Marker<'_>) -> Result<FileHeader, DecodeError> {
    let b = marker.body;
    if marker.kind != MarkerType::FileHeader || b.len() != 48 {
        return Err(DecodeError::Invalid);
    }
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    let magic = u32::from_le_bytes(b[0..4].try_into().unwrap_or_default());
    let version = u32::from_le_bytes(b[4..8].try_into().unwrap_or_default());
    if magic != MAGIC {
        return Err(DecodeError::Invalid);
    }
    let kind = match b[8] {
        1 => FileKind::Wal,
        2 => FileKind::Journal,
        3 => FileKind::Compaction,
        _ => return Err(DecodeError::Invalid),
    };
    Ok(FileHeader {
        version,
        kind,
        fid: u64_at(16),
        cid: u64_at(24),
        size: u64_at(32),
        created_ms: u64_at(40),
    })
}

/// Parses a footer body.
pub fn parse_footer(marker: &Marker<'_>) -> Result<Footer, DecodeError> {
    let b = marker.body;
    if marker.kind != MarkerType::Footer || b.len() != 24 {
        return Err(DecodeError::Invalid);
    }
    Ok(Footer {
        count: u64::from_le_bytes(b[0..8].try_into().unwrap_or_default()),
        max_tick: u64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
        crc_of_crcs: u32::from_le_bytes(b[16..20].try_into().unwrap_or_default()),
    })
}

/// One marker found by [`scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// Offset in the file.
    pub offset: usize,
    /// Unpadded length.
    pub len: usize,
    /// Type.
    pub kind: MarkerType,
    /// Flags.
    pub flags: u8,
    /// Tick.
    pub tick: u64,
    /// CRC.
    pub crc: u32,
}

/// How a scan ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanEnd {
    /// A footer was found (the file is sealed).
    Sealed,
    /// Zeros or the end of the file after the last marker.
    Clean,
    /// An invalid marker with nothing valid after it: a torn write at the tail.
    TornTail,
    /// An invalid marker followed by valid ones: corruption in the middle.
    Corrupt,
}

/// Result of scanning a whole file image.
#[derive(Clone, Debug)]
pub struct Scan {
    /// The file header, if valid.
    pub header: Option<FileHeader>,
    /// Every valid marker before the end (header and footer excluded).
    pub markers: Vec<Found>,
    /// Offset after the last valid marker (where appending may continue).
    pub valid_end: usize,
    /// How it ended.
    pub end: ScanEnd,
    /// Offset of the first invalid marker, if any.
    pub bad_offset: Option<usize>,
    /// The footer, if sealed.
    pub footer: Option<Footer>,
}

fn any_valid_marker_after(buf: &[u8], from: usize) -> bool {
    let mut at = padded(from + 1);
    while at + HEADER_LEN <= buf.len() {
        if let Ok(m) = decode(&buf[at..]) {
            if m.kind != MarkerType::FileHeader {
                return true;
            }
        }
        at += ALIGN;
    }
    false
}

/// Whether markers of this type are data (counted in footers, copied by the collector).
pub fn is_data(kind: MarkerType) -> bool {
    matches!(
        kind,
        MarkerType::Document | MarkerType::Remove | MarkerType::Truncate
    )
}

/// Scans a complete file image marker by marker.
pub fn scan(buf: &[u8]) -> Scan {
    scan_into(buf, Vec::new())
}

/// [`scan`] collecting the markers into `markers` (cleared first): callers that scan file
/// after file (the collector, the hint writer) hand the previous scan's vector back in, so a
/// 32 MiB file's ~200,000 entries do not regrow a fresh vector (fresh, zeroed pages) per file.
pub fn scan_into(buf: &[u8], mut markers: Vec<Found>) -> Scan {
    markers.clear();
    let mut result = Scan {
        header: None,
        markers,
        valid_end: 0,
        end: ScanEnd::Clean,
        bad_offset: None,
        footer: None,
    };
    match decode(buf) {
        Ok(m) => match parse_file_header(&m) {
            Ok(h) => {
                result.header = Some(h);
                result.valid_end = padded(m.len);
            }
            Err(_) => {
                result.bad_offset = Some(0);
                result.end = if any_valid_marker_after(buf, 0) {
                    ScanEnd::Corrupt
                } else {
                    ScanEnd::TornTail
                };
                return result;
            }
        },
        Err(DecodeError::End) if buf.iter().all(|&b| b == 0) => return result,
        Err(_) => {
            result.bad_offset = Some(0);
            result.end = if any_valid_marker_after(buf, 0) {
                ScanEnd::Corrupt
            } else {
                ScanEnd::TornTail
            };
            return result;
        }
    }
    let mut at = result.valid_end;
    loop {
        if at >= buf.len() {
            result.end = ScanEnd::Clean;
            return result;
        }
        match decode(&buf[at..]) {
            Ok(m) if m.kind == MarkerType::Footer => {
                match parse_footer(&m) {
                    Ok(f) => {
                        result.footer = Some(f);
                        result.end = ScanEnd::Sealed;
                        result.valid_end = at + padded(m.len);
                    }
                    Err(_) => {
                        result.bad_offset = Some(at);
                        result.end = ScanEnd::Corrupt;
                    }
                }
                return result;
            }
            Ok(m) if is_data(m.kind) => {
                let body_ok = marker_owner(&m).is_some();
                if !body_ok {
                    result.bad_offset = Some(at);
                    result.end = ScanEnd::Corrupt;
                    return result;
                }
                result.markers.push(Found {
                    offset: at,
                    len: m.len,
                    kind: m.kind,
                    flags: m.flags,
                    tick: m.tick,
                    crc: m.crc,
                });
                at += padded(m.len);
                result.valid_end = at;
            }
            Err(DecodeError::End) => {
                let rest = &buf[at..];
                if rest.iter().all(|&b| b == 0) {
                    result.end = ScanEnd::Clean;
                } else {
                    result.bad_offset = Some(at);
                    result.end = if any_valid_marker_after(buf, at) {
                        ScanEnd::Corrupt
                    } else {
                        ScanEnd::TornTail
                    };
                }
                return result;
            }
            _ => {
                result.bad_offset = Some(at);
                result.end = if any_valid_marker_after(buf, at) {
                    ScanEnd::Corrupt
                } else {
                    ScanEnd::TornTail
                };
                return result;
            }
        }
    }
}

/// Index of the markers that [`scan`] found which survive corruption when salvaging: every
/// valid data marker anywhere in the file, found by probing each aligned offset.
pub fn salvage(buf: &[u8]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + HEADER_LEN <= buf.len() {
        match decode(&buf[at..]) {
            Ok(m) if is_data(m.kind) => {
                if marker_owner(&m).is_some() {
                    out.push(Found {
                        offset: at,
                        len: m.len,
                        kind: m.kind,
                        flags: m.flags,
                        tick: m.tick,
                        crc: m.crc,
                    });
                    at += padded(m.len);
                    continue;
                }
                at += ALIGN;
            }
            Ok(m) => at += padded(m.len),
            Err(_) => at += ALIGN,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> FileHeader {
        FileHeader {
            version: FORMAT_VERSION,
            kind: FileKind::Journal,
            fid: 77,
            cid: 5,
            size: 1 << 20,
            created_ms: 1_700_000_000_000,
        }
    }

    #[test]
    fn every_marker_type_round_trips() {
        let h = file_header(&header(), 3);
        let m = decode(&h).unwrap();
        assert_eq!(m.kind, MarkerType::FileHeader);
        assert_eq!(m.tick, 3);
        let parsed = parse_file_header(&m).unwrap();
        assert_eq!(parsed.fid, 77);
        assert_eq!(parsed.cid, 5);
        assert_eq!(parsed.kind, FileKind::Journal);
        assert_eq!(parsed.version, FORMAT_VERSION);

        let f = Footer {
            count: 9,
            max_tick: 1234,
            crc_of_crcs: 0xdead_beef,
        };
        let enc = footer(&f, 1235);
        let m = decode(&enc).unwrap();
        assert_eq!(m.kind, MarkerType::Footer);
        assert_eq!(parse_footer(&m).unwrap(), f);

        let d = data_marker(
            MarkerType::Document,
            FLAG_COMMIT,
            42,
            7,
            99,
            "key1",
            b"{\"a\":1}",
        );
        assert_eq!(d.len() % ALIGN, 0);
        let m = decode(&d).unwrap();
        assert_eq!(
            (m.kind, m.flags, m.tick),
            (MarkerType::Document, FLAG_COMMIT, 42)
        );
        let body = data_body(&m).unwrap();
        assert_eq!((body.cid, body.rev, body.key), (7, 99, "key1"));
        assert_eq!(body.doc, b"{\"a\":1}");
        assert_eq!(&d[body.doc_offset..m.len], b"{\"a\":1}");

        let r = data_marker(MarkerType::Remove, 0, 43, 7, 100, "key1", b"");
        let m = decode(&r).unwrap();
        assert_eq!(m.kind, MarkerType::Remove);
        let body = data_body(&m).unwrap();
        assert_eq!((body.rev, body.key, body.doc), (100, "key1", &b""[..]));

        let t = truncate_marker(FLAG_COMMIT, 44, 7, 101);
        assert_eq!(t.len(), padded(TRUNCATE_LEN));
        let m = decode(&t).unwrap();
        assert_eq!(
            (m.kind, m.tick, m.len),
            (MarkerType::Truncate, 44, TRUNCATE_LEN)
        );
        assert_eq!(
            truncate_body(&m).unwrap(),
            TruncateBody { cid: 7, rev: 101 }
        );
        assert_eq!(marker_owner(&m), Some((7, 101)));
        // A truncate is not a document or removal and vice versa.
        assert!(data_body(&m).is_err());
        assert!(truncate_body(&decode(&r).unwrap()).is_err());
    }

    #[test]
    fn truncate_markers_are_data_for_scan_salvage_and_footers() {
        let a = data_marker(MarkerType::Document, FLAG_COMMIT, 2, 1, 1, "a", b"1");
        let t = truncate_marker(FLAG_COMMIT, 3, 1, 2);
        let image = file_with(&[a.clone(), t.clone()], true);
        let scan = scan(&image);
        assert_eq!(scan.end, ScanEnd::Sealed);
        let kinds: Vec<MarkerType> = scan.markers.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, vec![MarkerType::Document, MarkerType::Truncate]);
        let salvaged: Vec<MarkerType> = salvage(&image).iter().map(|m| m.kind).collect();
        assert_eq!(salvaged, kinds);
        // A truncate body of the wrong length is damage, not data.
        let mut bad = t.clone();
        bad.extend_from_slice(&[0u8; 8]);
        let len = (TRUNCATE_LEN + 8) as u32;
        bad[0..4].copy_from_slice(&len.to_le_bytes());
        finish_marker(&mut bad[..TRUNCATE_LEN + 8], MarkerType::Truncate, 0, 3);
        let m = decode(&bad).unwrap();
        assert_eq!(marker_owner(&m), None);
        let image = file_with(&[a, bad], false);
        assert_ne!(scan_end_of(&image), ScanEnd::Clean);
    }

    fn scan_end_of(image: &[u8]) -> ScanEnd {
        scan(image).end
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let d = data_marker(MarkerType::Document, 0, 42, 7, 99, "k", b"body bytes");
        let len = decode(&d).unwrap().len;
        for byte in 0..len {
            for bit in 0..8 {
                let mut c = d.clone();
                c[byte] ^= 1 << bit;
                assert!(decode(&c).is_err(), "flip at {byte}:{bit} undetected");
            }
        }
    }

    #[test]
    fn zero_length_is_end_and_short_buffers_are_truncated() {
        assert_eq!(decode(&[0u8; 64]), Err(DecodeError::End));
        let d = data_marker(MarkerType::Document, 0, 1, 1, 1, "k", b"xyz");
        assert_eq!(decode(&d[..10]), Err(DecodeError::Truncated));
        assert_eq!(decode(&d[..30]), Err(DecodeError::Truncated));
    }

    #[test]
    fn sync_commit_is_found_only_behind_the_offset_and_only_with_commit() {
        let a = data_marker(
            MarkerType::Document,
            FLAG_COMMIT | FLAG_SYNC,
            2,
            1,
            1,
            "a",
            b"1",
        );
        let b = data_marker(MarkerType::Document, FLAG_SYNC, 3, 1, 1, "b", b"2");
        let c = data_marker(MarkerType::Document, FLAG_COMMIT, 4, 1, 1, "c", b"3");
        let image = file_with(&[a.clone(), b.clone(), c], false);
        let after_a = FILE_HEADER_LEN + padded(a.len());
        assert!(sync_commit_from(&image, 0));
        assert!(sync_commit_from(&image, FILE_HEADER_LEN));
        // b carries SYNC without COMMIT (never written by the engine): no sync batch.
        assert!(!sync_commit_from(&image, after_a));
        // Found behind garbage too (probing every aligned offset).
        let mut damaged = image.clone();
        damaged[after_a + padded(b.len()) + 4] ^= 1;
        damaged[after_a + 2] ^= 1;
        assert!(!sync_commit_from(&damaged, after_a));
        assert!(sync_commit_from(&damaged, 1));
    }

    fn file_with(markers: &[Vec<u8>], sealed: bool) -> Vec<u8> {
        let mut buf = file_header(&header(), 1);
        for m in markers {
            buf.extend_from_slice(m);
        }
        if sealed {
            buf.extend_from_slice(&footer(
                &Footer {
                    count: markers.len() as u64,
                    max_tick: 10,
                    crc_of_crcs: 0,
                },
                11,
            ));
        }
        buf.resize(buf.len() + 256, 0);
        buf
    }

    #[test]
    fn scan_classifies_tails() {
        let a = data_marker(MarkerType::Document, FLAG_COMMIT, 2, 1, 1, "a", b"aaaa");
        let b = data_marker(MarkerType::Document, FLAG_COMMIT, 3, 1, 1, "b", b"bbbb");
        let c = data_marker(MarkerType::Remove, FLAG_COMMIT, 4, 1, 1, "a", b"");
        let buf = file_with(&[a.clone(), b.clone(), c.clone()], false);
        let s = scan(&buf);
        assert_eq!(s.end, ScanEnd::Clean);
        assert_eq!(s.markers.len(), 3);

        let sealed = scan(&file_with(&[a.clone(), b.clone()], true));
        assert_eq!(sealed.end, ScanEnd::Sealed);
        assert_eq!(sealed.footer.unwrap().count, 2);

        // A torn last marker: tail.
        let mut torn = file_with(&[a.clone(), b.clone(), c.clone()], false);
        let off = s.markers[2].offset;
        torn[off + 30] ^= 0xff;
        let t = scan(&torn);
        assert_eq!(t.end, ScanEnd::TornTail);
        assert_eq!(t.markers.len(), 2);
        assert_eq!(t.valid_end, off);

        // A broken middle marker followed by a valid one: corruption.
        let mut mid = file_with(&[a, b, c], false);
        let off = s.markers[1].offset;
        mid[off + 26] ^= 0x01;
        let m = scan(&mid);
        assert_eq!(m.end, ScanEnd::Corrupt);
        assert_eq!(m.bad_offset, Some(off));
        assert_eq!(salvage(&mid).len(), 2);
    }
}
