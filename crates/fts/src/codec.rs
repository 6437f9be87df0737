//! The stored form of a [`Segment`]: bytes with a versioned header and a crc32c, and a decoder that
//! never panics and never allocates more than the bytes can hold, whatever it is given.
//!
//! ```text
//! offset 0   "MWFTSEG1"   8 bytes magic
//!        8   version      u16 LE (1)
//!        10  flags        u16 LE: bit 0 = positions stored; other bits 0
//!        12  body_len     u64 LE
//!        20  crc          u32 LE crc32c of the body
//!        24  body         body_len bytes, every integer an unsigned LEB128 varint:
//!   num_docs | row ids (first, then deltas >= 1) | lengths (num_docs of them)
//!   num_terms | per term, ascending by bytes: len | UTF-8 bytes | df (1..=num_docs)
//!     | per entry: doc (first, then deltas >= 1) | freq (>= 1)
//!       | with positions: freq positions (first, then deltas >= 0)
//! ```
//! A decoded segment is checked whole: each document's frequencies sum to its length.
//! Talks to `segment.rs`.

use crate::error::{FtsError, Result};
use crate::segment::{Posting, Segment};

const MAGIC: &[u8; 8] = b"MWFTSEG1";
const VERSION: u16 = 1;
const HEADER: usize = 24;
const FLAG_POSITIONS: u16 = 1;

/// The segment's bytes.
pub fn encode(seg: &Segment) -> Vec<u8> {
    let mut body = Vec::new();
    put(&mut body, seg.row_ids.len() as u64);
    let mut prev = 0;
    for (i, &r) in seg.row_ids.iter().enumerate() {
        put(&mut body, if i == 0 { r } else { r - prev });
        prev = r;
    }
    for &l in &seg.lengths {
        put(&mut body, u64::from(l));
    }
    put(&mut body, seg.terms.len() as u64);
    for (term, posting) in seg.terms.iter().zip(&seg.postings) {
        put(&mut body, term.len() as u64);
        body.extend_from_slice(term.as_bytes());
        encode_posting(&mut body, posting, seg.with_position);
    }
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    let flags = if seg.with_position { FLAG_POSITIONS } else { 0 };
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

fn encode_posting(body: &mut Vec<u8>, p: &Posting, with_position: bool) {
    put(body, p.docs.len() as u64);
    let mut prev = 0;
    for (i, (&d, &f)) in p.docs.iter().zip(&p.freqs).enumerate() {
        put(body, u64::from(if i == 0 { d } else { d - prev }));
        prev = d;
        put(body, u64::from(f));
        if with_position {
            let mut last = 0;
            for (j, &pos) in p.positions_of(i).iter().enumerate() {
                put(body, u64::from(if j == 0 { pos } else { pos - last }));
                last = pos;
            }
        }
    }
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes and verifies segment bytes.
pub fn decode(bytes: &[u8]) -> Result<Segment> {
    let with_position = check_header(bytes)?;
    let mut r = Reader {
        buf: bytes.get(HEADER..).unwrap_or(&[]),
    };
    let num_docs = r.count("document count")?;
    let mut row_ids = Vec::with_capacity(num_docs);
    for i in 0..num_docs {
        let v = r.varint()?;
        let row = if i == 0 {
            Some(v)
        } else {
            row_ids
                .last()
                .and_then(|p: &u64| p.checked_add(v))
                .filter(|_| v > 0)
        };
        row_ids.push(row.ok_or_else(|| FtsError::corrupt("row ids are not strictly ascending"))?);
    }
    let mut lengths = Vec::with_capacity(num_docs);
    for _ in 0..num_docs {
        lengths.push(r.u32("document length")?);
    }
    let (terms, postings) = decode_terms(&mut r, num_docs, with_position)?;
    if !r.buf.is_empty() {
        return Err(FtsError::corrupt("bytes after the last term"));
    }
    check_lengths(&lengths, &postings)?;
    let total_tokens = lengths.iter().map(|&l| u64::from(l)).sum();
    Ok(Segment {
        with_position,
        row_ids,
        lengths,
        total_tokens,
        terms,
        postings,
        blocks: Default::default(),
    })
}

fn check_header(bytes: &[u8]) -> Result<bool> {
    let header = bytes
        .get(..HEADER)
        .ok_or_else(|| FtsError::corrupt("shorter than its header"))?;
    if &header[..8] != MAGIC {
        return Err(FtsError::corrupt("not an FTS segment (bad magic)"));
    }
    let version = u16::from_le_bytes([header[8], header[9]]);
    if version != VERSION {
        return Err(FtsError::corrupt(format!(
            "unknown segment version {version}"
        )));
    }
    let flags = u16::from_le_bytes([header[10], header[11]]);
    if flags & !FLAG_POSITIONS != 0 {
        return Err(FtsError::corrupt(format!("unknown flags {flags:#x}")));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[12..20]);
    let body_len = u64::from_le_bytes(len);
    if body_len != (bytes.len() - HEADER) as u64 {
        return Err(FtsError::corrupt("body length does not match the bytes"));
    }
    let mut crc = [0u8; 4];
    crc.copy_from_slice(&header[20..24]);
    if u32::from_le_bytes(crc) != crc32c::crc32c(&bytes[HEADER..]) {
        return Err(FtsError::corrupt("checksum mismatch"));
    }
    Ok(flags & FLAG_POSITIONS != 0)
}

fn decode_terms(
    r: &mut Reader,
    num_docs: usize,
    with_position: bool,
) -> Result<(Vec<String>, Vec<Posting>)> {
    let num_terms = r.count("term count")?;
    let mut terms: Vec<String> = Vec::with_capacity(num_terms);
    let mut postings = Vec::with_capacity(num_terms);
    for _ in 0..num_terms {
        let len = r.count("term length")?;
        let raw = r.take(len)?;
        let term =
            std::str::from_utf8(raw).map_err(|_| FtsError::corrupt("a term is not UTF-8"))?;
        if terms.last().is_some_and(|prev| prev.as_str() >= term) {
            return Err(FtsError::corrupt("terms are not strictly ascending"));
        }
        terms.push(term.to_string());
        postings.push(decode_posting(r, num_docs, with_position)?);
    }
    Ok((terms, postings))
}

fn decode_posting(r: &mut Reader, num_docs: usize, with_position: bool) -> Result<Posting> {
    let df = r.count("document frequency")?;
    if df == 0 || df > num_docs {
        return Err(FtsError::corrupt(
            "a term's document frequency is out of range",
        ));
    }
    let mut p = Posting {
        docs: Vec::with_capacity(df),
        freqs: Vec::with_capacity(df),
        ..Posting::default()
    };
    if with_position {
        p.starts.push(0);
    }
    for i in 0..df {
        let v = r.u32("document number")?;
        let doc = if i == 0 {
            Some(v)
        } else {
            p.docs
                .last()
                .and_then(|d| d.checked_add(v))
                .filter(|_| v > 0)
        };
        let doc = doc
            .filter(|&d| (d as usize) < num_docs)
            .ok_or_else(|| FtsError::corrupt("document numbers out of order or range"))?;
        let freq = r.u32("term frequency")?;
        if freq == 0 {
            return Err(FtsError::corrupt("a zero term frequency"));
        }
        p.docs.push(doc);
        p.freqs.push(freq);
        if with_position {
            read_positions(r, freq, &mut p)?;
        }
    }
    Ok(p)
}

fn read_positions(r: &mut Reader, freq: u32, p: &mut Posting) -> Result<()> {
    if freq as usize > r.buf.len() {
        return Err(FtsError::corrupt("more positions than bytes"));
    }
    let mut last = 0u32;
    for j in 0..freq {
        let v = r.u32("position")?;
        last = if j == 0 {
            v
        } else {
            last.checked_add(v)
                .ok_or_else(|| FtsError::corrupt("position overflow"))?
        };
        p.positions.push(last);
    }
    let end =
        u32::try_from(p.positions.len()).map_err(|_| FtsError::corrupt("too many positions"))?;
    p.starts.push(end);
    Ok(())
}

fn check_lengths(lengths: &[u32], postings: &[Posting]) -> Result<()> {
    let mut sums = vec![0u64; lengths.len()];
    for p in postings {
        for (&d, &f) in p.docs.iter().zip(&p.freqs) {
            sums[d as usize] += u64::from(f);
        }
    }
    if sums.iter().zip(lengths).any(|(&s, &l)| s != u64::from(l)) {
        return Err(FtsError::corrupt(
            "document lengths do not match the postings",
        ));
    }
    Ok(())
}

/// A cursor over the body; every read checks the bytes left.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or_else(|| FtsError::corrupt("truncated"))?;
            self.buf = rest;
            let bits = u64::from(b & 0x7f);
            if i == 9 && b > 1 {
                return Err(FtsError::corrupt("varint overflow"));
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(FtsError::corrupt("varint too long"))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        u32::try_from(self.varint()?).map_err(|_| FtsError::corrupt(format!("{what} out of range")))
    }

    /// A count of items of at least one byte each: never more than the bytes left.
    fn count(&mut self, what: &str) -> Result<usize> {
        let v = self.varint()?;
        if v > self.buf.len() as u64 {
            return Err(FtsError::corrupt(format!(
                "{what} {v} exceeds the bytes left"
            )));
        }
        Ok(v as usize)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(FtsError::corrupt("truncated"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::Analyzer;
    use crate::params::FtsParams;
    use crate::segment::SegmentBuilder;
    use proptest::prelude::*;

    fn sample(with_position: bool) -> Segment {
        let a = Analyzer::new(&FtsParams::default()).expect("analyzer");
        let mut b = SegmentBuilder::new(&a, with_position);
        for (row, text) in [
            (7u64, "quick brown fox"),
            (2, "lazy dog jumps over the fox fox"),
            (40, ""),
            (11, "brown dog"),
        ] {
            b.add(row, Some(text)).expect("add");
        }
        b.finish().expect("finish")
    }

    #[test]
    fn round_trips_with_and_without_positions() {
        for wp in [false, true] {
            let s = sample(wp);
            assert_eq!(decode(&encode(&s)).expect("decode"), s);
        }
    }

    #[test]
    fn damage_is_reported_not_panicked() {
        let bytes = encode(&sample(true));
        assert!(decode(&bytes[..10]).is_err());
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(decode(&flipped), Err(FtsError::Corrupt(m)) if m.contains("checksum")));
        let mut version = bytes;
        version[8] = 9;
        assert!(decode(&version).is_err());
    }

    /// Wraps a body in a valid header, so the body checks (not the crc) are what is tested.
    fn framed(body: &[u8], flags: u16) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let mut body = Vec::new();
        put(&mut body, u64::MAX >> 1);
        assert!(decode(&framed(&body, 0)).is_err());
    }

    proptest! {
        #[test]
        fn random_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512), flags in 0u16..2) {
            let _ = decode(&framed(&body, flags));
        }

        #[test]
        fn mutated_bodies_never_panic(wp in any::<bool>(), edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
            let bytes = encode(&sample(wp));
            let mut body = bytes[HEADER..].to_vec();
            for (at, v) in edits {
                let i = at % body.len();
                body[i] = v;
            }
            if let Ok(s) = decode(&framed(&body, u16::from(wp))) {
                // Whatever decodes is self-consistent.
                prop_assert_eq!(decode(&encode(&s)).expect("re-decode"), s);
            }
        }
    }
}
