//! Merge keys: turning the `on` columns of a row into a hashable [`Key`],
//! and the in-memory [`KeyIndex`] from key to row address that lets a merge
//! of k rows touch O(k) target rows.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Int64Type, UInt64Type};
use arrow::row::{RowConverter, SortField};
use arrow_schema::Schema;
use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::schema::column_list;

/// The value of a row's key columns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// A single integer key column (any width). Signed values are widened
    /// to i64; unsigned ones are widened to u64 and stored with the same
    /// 64 bits, so every value of every width keeps its own key (a key
    /// column has one type, so the two never meet).
    Int(i64),
    /// Anything else: a single string key, or the arrow row encoding of a
    /// composite key.
    Bytes(Box<[u8]>),
}

#[derive(Debug)]
enum Encoding {
    Int,
    UInt,
    Utf8,
    Rows(RowConverter),
}

/// Encodes the `on` columns of batches that share a schema into [`Key`]s.
#[derive(Debug)]
pub struct KeyEncoder {
    on: Vec<String>,
    encoding: Encoding,
}

impl KeyEncoder {
    /// An encoder for `on` over `schema`; an unknown column is an error naming it.
    pub fn new(schema: &Schema, on: &[String]) -> Result<Self> {
        if on.is_empty() {
            return Err(Error::invalid(
                "merge insert needs at least one key column in `on`",
            ));
        }
        let mut types = Vec::with_capacity(on.len());
        for name in on {
            let field = schema.field_with_name(name).map_err(|_| {
                Error::invalid(format!(
                    "key column '{name}' is not in the table schema (columns: {})",
                    column_list(schema)
                ))
            })?;
            types.push(field.data_type().clone());
        }
        let encoding = match types.as_slice() {
            [t] if t.is_signed_integer() => Encoding::Int,
            [t] if t.is_unsigned_integer() => Encoding::UInt,
            [DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View] => Encoding::Utf8,
            _ => Encoding::Rows(RowConverter::new(
                types.into_iter().map(SortField::new).collect(),
            )?),
        };
        Ok(Self {
            on: on.to_vec(),
            encoding,
        })
    }

    /// The key column names.
    pub fn on(&self) -> &[String] {
        &self.on
    }

    fn columns(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        self.on
            .iter()
            .map(|n| {
                batch.column_by_name(n).cloned().ok_or_else(|| {
                    Error::invalid(format!("key column '{n}' is missing from the data"))
                })
            })
            .collect()
    }

    /// One key per row; `None` where any key column is null (null never matches).
    pub fn encode(&self, batch: &RecordBatch) -> Result<Vec<Option<Key>>> {
        let cols = self.columns(batch)?;
        let n = batch.num_rows();
        match &self.encoding {
            Encoding::Int => {
                let c = crate::schema::strict_cast(&cols[0], &DataType::Int64)?;
                let a = c.as_primitive::<Int64Type>();
                Ok((0..n)
                    .map(|i| a.is_valid(i).then(|| Key::Int(a.value(i))))
                    .collect())
            }
            Encoding::UInt => {
                let c = crate::schema::strict_cast(&cols[0], &DataType::UInt64)?;
                let a = c.as_primitive::<UInt64Type>();
                Ok((0..n)
                    .map(|i| {
                        a.is_valid(i)
                            .then(|| Key::Int(i64::from_ne_bytes(a.value(i).to_ne_bytes())))
                    })
                    .collect())
            }
            Encoding::Utf8 => {
                let c = &cols[0];
                let bytes = |i: usize| -> &[u8] {
                    match c.data_type() {
                        DataType::LargeUtf8 => c.as_string::<i64>().value(i).as_bytes(),
                        DataType::Utf8View => c.as_string_view().value(i).as_bytes(),
                        _ => c.as_string::<i32>().value(i).as_bytes(),
                    }
                };
                if !matches!(
                    c.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                ) {
                    return Err(Error::invalid(format!(
                        "key column '{}' holds {} where the table has a string",
                        self.on[0],
                        c.data_type()
                    )));
                }
                Ok((0..n)
                    .map(|i| c.is_valid(i).then(|| Key::Bytes(bytes(i).into())))
                    .collect())
            }
            Encoding::Rows(conv) => {
                let rows = conv.convert_columns(&cols)?;
                Ok((0..n)
                    .map(|i| {
                        cols.iter()
                            .all(|c| c.is_valid(i))
                            .then(|| Key::Bytes(rows.row(i).as_ref().into()))
                    })
                    .collect())
            }
        }
    }

    /// `(id = 1, name = 'a')` for row `row` of `batch`, as error messages name keys.
    pub fn describe(&self, batch: &RecordBatch, row: usize) -> String {
        let parts: Vec<String> = self
            .on
            .iter()
            .map(|n| {
                let v = batch
                    .column_by_name(n)
                    .map(|c| display_value(c, row))
                    .unwrap_or_default();
                format!("{n} = {v}")
            })
            .collect();
        format!("({})", parts.join(", "))
    }
}

/// One value as SQL would write it (strings quoted).
pub fn display_value(array: &ArrayRef, row: usize) -> String {
    if array.is_null(row) {
        return "NULL".into();
    }
    let opts = arrow::util::display::FormatOptions::default();
    let s = arrow::util::display::ArrayFormatter::try_new(array.as_ref(), &opts)
        .map(|f| f.value(row).to_string())
        .unwrap_or_else(|_| "?".into());
    match array.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => format!("'{s}'"),
        _ => s,
    }
}

/// Where a row lives: fragment id and offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowAddr {
    /// Fragment id.
    pub frag: u64,
    /// Row offset within the fragment.
    pub row: u32,
}

/// Key -> live row addresses for one set of key columns at one version.
#[derive(Debug, Clone)]
pub struct KeyIndex {
    on: Vec<String>,
    /// The version this index describes.
    pub version: u64,
    map: HashMap<Key, RowAddr>,
    /// Further rows with a key already in `map` (tables written by `add`
    /// may hold duplicates; merge updates all of them).
    dups: HashMap<Key, Vec<RowAddr>>,
}

impl KeyIndex {
    /// An empty index over `on`.
    pub fn new(on: &[String], version: u64) -> Self {
        Self {
            on: on.to_vec(),
            version,
            map: HashMap::new(),
            dups: HashMap::new(),
        }
    }

    /// The key columns this index is over.
    pub fn on(&self) -> &[String] {
        &self.on
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the index holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Adds every live row of a fragment batch.
    pub fn add_batch(
        &mut self,
        enc: &KeyEncoder,
        frag: u64,
        batch: &RecordBatch,
        deleted: &roaring::RoaringBitmap,
    ) -> Result<()> {
        for (i, key) in enc.encode(batch)?.into_iter().enumerate() {
            if deleted.contains(i as u32) {
                continue;
            }
            if let Some(key) = key {
                self.insert(
                    key,
                    RowAddr {
                        frag,
                        row: i as u32,
                    },
                );
            }
        }
        Ok(())
    }

    /// Records that `addr` holds `key`.
    pub fn insert(&mut self, key: Key, addr: RowAddr) {
        match self.map.entry(key) {
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert(addr);
            }
            hashbrown::hash_map::Entry::Occupied(o) => {
                self.dups.entry(o.key().clone()).or_default().push(addr);
            }
        }
    }

    /// Forgets every row with `key`.
    pub fn remove(&mut self, key: &Key) {
        self.map.remove(key);
        if !self.dups.is_empty() {
            self.dups.remove(key);
        }
    }

    /// Forgets the single row `addr` of `key`.
    pub fn remove_addr(&mut self, key: &Key, addr: RowAddr) {
        if let Some(extra) = self.dups.get_mut(key) {
            extra.retain(|a| *a != addr);
            let empty = extra.is_empty();
            if self.map.get(key) == Some(&addr) {
                if let Some(first) = extra.pop() {
                    self.map.insert(key.clone(), first);
                }
            }
            if empty || self.dups.get(key).is_some_and(Vec::is_empty) {
                self.dups.remove(key);
            }
            return;
        }
        if self.map.get(key) == Some(&addr) {
            self.map.remove(key);
        }
    }

    /// Live rows holding `key`.
    pub fn get(&self, key: &Key) -> Vec<RowAddr> {
        let mut out = Vec::new();
        if let Some(a) = self.map.get(key) {
            out.push(*a);
            if let Some(extra) = self.dups.get(key) {
                out.extend_from_slice(extra);
            }
        }
        out
    }

    /// How many live rows hold `key`.
    pub fn count(&self, key: &Key) -> u32 {
        match self.map.get(key) {
            None => 0,
            Some(_) => 1 + self.dups.get(key).map_or(0, |d| d.len() as u32),
        }
    }

    /// Whether any live row holds `key`.
    pub fn contains(&self, key: &Key) -> bool {
        self.map.contains_key(key)
    }
}

/// Shared handle to an index.
pub type SharedKeyIndex = Arc<KeyIndex>;
