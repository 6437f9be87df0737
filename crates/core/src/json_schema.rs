//! The JSON schema encoding of the LanceDB REST protocol (`describe/`
//! answers): `{"fields": [{"name", "type": {"type": "int64", "fields"?, "length"?}, "nullable"}]}`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use serde_json::{json, Value};

use crate::error::{Error, Result};

fn unit(u: &TimeUnit) -> &'static str {
    match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

/// Type names as Lance's JSON schema writes them (what the official clients parse).
/// The JSON form of a data type (`{"type": "int32"}`), as in a schema.
pub fn type_json(t: &DataType) -> Result<Value> {
    let simple = |n: &str| json!({ "type": n });
    Ok(match t {
        DataType::Null => simple("null"),
        DataType::Boolean => simple("bool"),
        DataType::Int8 => simple("int8"),
        DataType::Int16 => simple("int16"),
        DataType::Int32 => simple("int32"),
        DataType::Int64 => simple("int64"),
        DataType::UInt8 => simple("uint8"),
        DataType::UInt16 => simple("uint16"),
        DataType::UInt32 => simple("uint32"),
        DataType::UInt64 => simple("uint64"),
        DataType::Float16 => simple("halffloat"),
        DataType::Float32 => simple("float"),
        DataType::Float64 => simple("double"),
        DataType::Utf8 => simple("string"),
        DataType::LargeUtf8 => simple("large_string"),
        DataType::Binary => simple("binary"),
        DataType::LargeBinary => simple("large_binary"),
        DataType::Date32 => simple("date32:day"),
        DataType::Date64 => simple("date64:ms"),
        DataType::Timestamp(u, tz) => simple(&format!(
            "timestamp:{}:{}",
            unit(u),
            tz.as_deref().unwrap_or("-")
        )),
        DataType::FixedSizeList(f, n) => {
            json!({"type": "fixed_size_list", "fields": [field_json(f)?], "length": n})
        }
        DataType::FixedSizeBinary(n) => json!({"type": "fixed_size_binary", "length": n}),
        DataType::List(f) => json!({"type": "list", "fields": [field_json(f)?]}),
        DataType::LargeList(f) => json!({"type": "large_list", "fields": [field_json(f)?]}),
        DataType::Struct(fs) => {
            json!({"type": "struct", "fields": fs.iter().map(|f| field_json(f)).collect::<Result<Vec<_>>>()?})
        }
        // Lance's logical type strings for the rest (what the clients parse).
        DataType::Decimal128(p, sc) => simple(&format!("decimal:128:{p}:{sc}")),
        DataType::Decimal256(p, sc) => simple(&format!("decimal:256:{p}:{sc}")),
        DataType::Time32(u) => simple(&format!("time32:{}", unit(u))),
        DataType::Time64(u) => simple(&format!("time64:{}", unit(u))),
        DataType::Duration(u) => simple(&format!("duration:{}", unit(u))),
        DataType::Dictionary(k, v) => {
            let name = |t: &DataType| -> Result<String> {
                match type_json(t)?.get("type").and_then(Value::as_str) {
                    Some(n) if !n.contains(':') || n.starts_with("date") => Ok(n.to_string()),
                    _ => Err(Error::not_supported(format!(
                        "dictionary of {t} has no JSON schema encoding"
                    ))),
                }
            };
            simple(&format!("dict:{}:{}:false", name(v)?, name(k)?))
        }
        other => {
            return Err(Error::not_supported(format!(
                "type {other} has no JSON schema encoding"
            )))
        }
    })
}

fn field_json(f: &Field) -> Result<Value> {
    let mut v =
        json!({"name": f.name(), "type": type_json(f.data_type())?, "nullable": f.is_nullable()});
    if !f.metadata().is_empty() {
        v["metadata"] = json!(f.metadata());
    }
    Ok(v)
}

/// A `metadata` object of string values (absent or null: empty); anything else is refused.
fn metadata(v: &Value, of: &str) -> Result<HashMap<String, String>> {
    match v.get("metadata") {
        None | Some(Value::Null) => Ok(HashMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(bad(format!("{of} metadata '{k}' is not a string"))),
            })
            .collect(),
        Some(_) => Err(bad(format!("{of} metadata is not an object"))),
    }
}

/// Encodes a schema.
pub fn to_json(s: &Schema) -> Result<Value> {
    Ok(
        json!({"fields": s.fields().iter().map(|f| field_json(f)).collect::<Result<Vec<_>>>()?, "metadata": s.metadata()}),
    )
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::invalid(format!("bad JSON schema: {msg}"))
}

fn parse_field(v: &Value) -> Result<Field> {
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("field without a name"))?;
    let nullable = v.get("nullable").and_then(Value::as_bool).unwrap_or(true);
    let t = v
        .get("type")
        .ok_or_else(|| bad(format!("field '{name}' without a type")))?;
    Ok(Field::new(name, parse_type(t)?, nullable)
        .with_metadata(metadata(v, &format!("field '{name}'"))?))
}

fn child(t: &Value) -> Result<Arc<Field>> {
    let f = t
        .get("fields")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .ok_or_else(|| bad("list type without a child field"))?;
    Ok(Arc::new(parse_field(f)?))
}

/// A data type from its JSON form (`{"type": "int32"}`), as in a schema.
pub fn parse_type(t: &Value) -> Result<DataType> {
    let name = t
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("type without a name"))?;
    let lower = name.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("timestamp:") {
        let mut parts = rest.splitn(2, ':');
        let u = match parts.next() {
            Some("s") => TimeUnit::Second,
            Some("ms") => TimeUnit::Millisecond,
            Some("us") => TimeUnit::Microsecond,
            Some("ns") => TimeUnit::Nanosecond,
            other => return Err(bad(format!("unknown timestamp unit {other:?}"))),
        };
        let tz = parts
            .next()
            .filter(|t| *t != "-")
            .map(|t| Arc::from(t.to_string()));
        return Ok(DataType::Timestamp(u, tz));
    }
    if let Some(t) = parse_logical(&lower)? {
        return Ok(t);
    }
    // Lance's names first, then the lance-namespace spellings.
    Ok(match lower.as_str() {
        "halffloat" => DataType::Float16,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "date32:day" => DataType::Date32,
        "date64:ms" => DataType::Date64,
        "fixed_size_binary" => {
            let n = t
                .get("length")
                .and_then(Value::as_i64)
                .ok_or_else(|| bad("fixed_size_binary without length"))?;
            DataType::FixedSizeBinary(i32::try_from(n).map_err(bad)?)
        }
        "null" => DataType::Null,
        "bool" | "boolean" => DataType::Boolean,
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "uint8" => DataType::UInt8,
        "uint16" => DataType::UInt16,
        "uint32" => DataType::UInt32,
        "uint64" => DataType::UInt64,
        "float16" => DataType::Float16,
        "float32" => DataType::Float32,
        "float64" => DataType::Float64,
        "utf8" | "string" => DataType::Utf8,
        "large_utf8" | "large_string" => DataType::LargeUtf8,
        "binary" => DataType::Binary,
        "large_binary" => DataType::LargeBinary,
        "date32" => DataType::Date32,
        "date64" => DataType::Date64,
        "timestamp[s]" => DataType::Timestamp(TimeUnit::Second, None),
        "timestamp[ms]" => DataType::Timestamp(TimeUnit::Millisecond, None),
        "timestamp" | "timestamp[us]" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "timestamp[ns]" => DataType::Timestamp(TimeUnit::Nanosecond, None),
        "fixed_size_list" | "list" | "large_list" | "struct" => parse_nested(&lower, t)?,
        other => return Err(bad(format!("unknown type '{other}'"))),
    })
}

/// List, fixed-size list and struct types (with child fields).
fn parse_nested(name: &str, t: &Value) -> Result<DataType> {
    Ok(match name {
        "fixed_size_list" => {
            let n = t
                .get("length")
                .and_then(Value::as_i64)
                .ok_or_else(|| bad("fixed_size_list without length"))?;
            DataType::FixedSizeList(child(t)?, i32::try_from(n).map_err(bad)?)
        }
        "list" => DataType::List(child(t)?),
        "large_list" => DataType::LargeList(child(t)?),
        _ => DataType::Struct(
            t.get("fields")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("struct without fields"))?
                .iter()
                .map(parse_field)
                .collect::<Result<Vec<_>>>()?
                .into(),
        ),
    })
}

fn time_unit(u: &str) -> Result<TimeUnit> {
    match u {
        "s" => Ok(TimeUnit::Second),
        "ms" => Ok(TimeUnit::Millisecond),
        "us" => Ok(TimeUnit::Microsecond),
        "ns" => Ok(TimeUnit::Nanosecond),
        other => Err(bad(format!("unknown time unit {other:?}"))),
    }
}

/// Lance logical type strings with parameters (`decimal:128:10:2`,
/// `dict:string:int32:false`, `time64:us`, `duration:ms`).
fn parse_logical(name: &str) -> Result<Option<DataType>> {
    let parts: Vec<&str> = name.split(':').collect();
    let num = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| bad(format!("bad number in '{name}'")))
    };
    Ok(Some(match parts.as_slice() {
        ["decimal", bits, p, sc] => {
            let p = u8::try_from(num(p)?).map_err(bad)?;
            let sc = i8::try_from(num(sc)?).map_err(bad)?;
            match *bits {
                "128" => DataType::Decimal128(p, sc),
                "256" => DataType::Decimal256(p, sc),
                other => return Err(bad(format!("decimal of {other} bits"))),
            }
        }
        ["time32", u] => DataType::Time32(time_unit(u)?),
        ["time64", u] => DataType::Time64(time_unit(u)?),
        ["duration", u] => DataType::Duration(time_unit(u)?),
        ["dict", value, index, _ordered] => DataType::Dictionary(
            Box::new(parse_type(&json!({ "type": index }))?),
            Box::new(parse_type(&json!({ "type": value }))?),
        ),
        _ => return Ok(None),
    }))
}

/// Decodes a schema.
pub fn from_json(v: &Value) -> Result<Schema> {
    let fields = v
        .get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no fields"))?;
    Ok(Schema::new_with_metadata(
        fields.iter().map(parse_field).collect::<Result<Vec<_>>>()?,
        metadata(v, "schema")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_of_schema_and_fields_roundtrips() {
        let f = Field::new("v", DataType::Float32, true)
            .with_metadata(HashMap::from([("k".to_string(), "fv".to_string())]));
        let s = Schema::new_with_metadata(
            vec![f],
            HashMap::from([("embedding_functions".to_string(), "[]".to_string())]),
        );
        let back = from_json(&to_json(&s).expect("enc")).expect("dec");
        assert_eq!(back, s);
        let bad: Value = serde_json::from_str(
            r#"{"fields": [{"name": "x", "type": {"type": "int32"}, "metadata": {"a": 1}}]}"#,
        )
        .expect("json");
        let e = from_json(&bad).expect_err("a number is not a metadata value");
        assert!(
            e.to_string()
                .contains("field 'x' metadata 'a' is not a string"),
            "{e}"
        );
    }

    #[test]
    fn roundtrip() {
        let s = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new(
                "v",
                DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 4),
                true,
            ),
            Field::new("s", DataType::Utf8, true),
            Field::new("t", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]);
        let j = to_json(&s).expect("enc");
        assert_eq!(j["fields"][0]["type"]["type"], "int64");
        assert_eq!(j["fields"][1]["type"]["fields"][0]["type"]["type"], "float");
        assert_eq!(j["fields"][2]["type"]["type"], "string");
        assert_eq!(j["fields"][3]["type"]["type"], "timestamp:ms:-");
        let ns: Value = serde_json::from_str(
            r#"{"fields": [{"name": "x", "type": {"type": "float64"}, "nullable": true}]}"#,
        )
        .expect("json");
        assert_eq!(
            from_json(&ns)
                .expect("namespace spelling")
                .field(0)
                .data_type(),
            &DataType::Float64
        );
        assert_eq!(from_json(&j).expect("dec"), s);
    }

    /// Regression (hostile-input issue, item 8): tables with dictionary or
    /// Decimal128 columns could be created but never described again.
    #[test]
    fn regression_every_creatable_type_has_an_encoding() {
        let dict = |k: DataType, v: DataType| DataType::Dictionary(Box::new(k), Box::new(v));
        let types = vec![
            dict(DataType::Int32, DataType::Utf8),
            dict(DataType::Int8, DataType::LargeUtf8),
            dict(DataType::UInt16, DataType::Int64),
            DataType::Decimal128(38, 10),
            DataType::Decimal256(76, -3),
            DataType::Time32(TimeUnit::Millisecond),
            DataType::Time64(TimeUnit::Nanosecond),
            DataType::Duration(TimeUnit::Second),
            DataType::Date32,
            DataType::FixedSizeBinary(16),
            DataType::LargeList(Arc::new(Field::new("item", DataType::Int16, true))),
        ];
        let s = Schema::new(
            types
                .iter()
                .enumerate()
                .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true))
                .collect::<Vec<_>>(),
        );
        let j = to_json(&s).expect("every type encodes");
        assert_eq!(j["fields"][0]["type"]["type"], "dict:string:int32:false");
        assert_eq!(j["fields"][3]["type"]["type"], "decimal:128:38:10");
        assert_eq!(from_json(&j).expect("and decodes"), s);
    }
}
