//! The schema-evolution routes' bodies: `add_columns/`
//! (`{"new_columns": [{"name", "expression"}]}`), `alter_columns/`
//! (`{"alterations": [{"path", "rename", "nullable", "data_type"}]}`, the
//! type in its schema JSON form) and `drop_columns/` (`{"columns": [...]}`),
//! each answered `{"version": N}`; as the official clients send them.

use arrow_schema::DataType;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{ColumnAlteration, NewColumns};
use crate::error::{Error, Result};
use crate::json_schema;

/// `add_columns/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddColumnsBody {
    /// The columns.
    pub new_columns: Vec<NewColumnBody>,
}

/// One column of `add_columns/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewColumnBody {
    /// Its name.
    pub name: String,
    /// SQL computing its values from each row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// A computed column (filled later by `refreshColumn`): not built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed: Option<String>,
}

impl AddColumnsBody {
    /// What the body asks for.
    pub fn to_new_columns(&self) -> Result<NewColumns> {
        let mut out = Vec::with_capacity(self.new_columns.len());
        for c in &self.new_columns {
            match (&c.expression, &c.computed) {
                (Some(e), None) => out.push((c.name.clone(), e.clone())),
                (None, Some(_)) => {
                    return Err(Error::not_supported(format!(
                        "computed column '{}' (filled by refreshColumn) is not supported by memwal yet; \
                         give `expression` to fill it now",
                        c.name
                    )))
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "new column '{}' needs exactly one of `expression` or `computed`",
                        c.name
                    )))
                }
            }
        }
        Ok(NewColumns::Sql(out))
    }

    /// The body for `cols` (all-null columns as `CAST(NULL AS type)`).
    pub fn from_new_columns(cols: &NewColumns) -> Result<Self> {
        let new_columns = match cols {
            NewColumns::Sql(list) => list
                .iter()
                .map(|(name, sql)| NewColumnBody {
                    name: name.clone(),
                    expression: Some(sql.clone()),
                    computed: None,
                })
                .collect(),
            NewColumns::Nulls(fields) => fields
                .iter()
                .map(|f| {
                    Ok(NewColumnBody {
                        name: f.name().clone(),
                        expression: Some(format!("CAST(NULL AS {})", sql_type(f.data_type())?)),
                        computed: None,
                    })
                })
                .collect::<Result<_>>()?,
        };
        Ok(Self { new_columns })
    }
}

/// The SQL name of a type our filters can `CAST` to.
fn sql_type(dt: &DataType) -> Result<&'static str> {
    Ok(match dt {
        DataType::Int8 => "TINYINT",
        DataType::Int16 => "SMALLINT",
        DataType::Int32 => "INT",
        DataType::Int64 => "BIGINT",
        DataType::UInt8 => "TINYINT UNSIGNED",
        DataType::UInt16 => "SMALLINT UNSIGNED",
        DataType::UInt32 => "INT UNSIGNED",
        DataType::UInt64 => "BIGINT UNSIGNED",
        DataType::Float32 => "FLOAT",
        DataType::Float64 => "DOUBLE",
        DataType::Boolean => "BOOLEAN",
        DataType::Utf8 => "STRING",
        DataType::Binary => "BINARY",
        DataType::Date32 => "DATE",
        DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None) => "TIMESTAMP",
        other => {
            return Err(Error::not_supported(format!(
                "adding an all-null column of type {other} to a remote table is not supported by \
                 memwal yet (the protocol sends SQL; use a SQL expression)"
            )))
        }
    })
}

/// `alter_columns/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlterColumnsBody {
    /// The alterations.
    pub alterations: Vec<AlterationBody>,
}

/// One alteration of `alter_columns/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlterationBody {
    /// The column.
    pub path: String,
    /// New name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rename: Option<String>,
    /// New nullability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nullable: Option<bool>,
    /// New type, as in a schema (`{"type": "int64"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_type: Option<Value>,
}

impl AlterColumnsBody {
    /// What the body asks for.
    pub fn to_alterations(&self) -> Result<Vec<ColumnAlteration>> {
        self.alterations
            .iter()
            .map(|a| {
                Ok(ColumnAlteration {
                    path: a.path.clone(),
                    rename: a.rename.clone(),
                    nullable: a.nullable,
                    data_type: a
                        .data_type
                        .as_ref()
                        .map(json_schema::parse_type)
                        .transpose()?,
                })
            })
            .collect()
    }

    /// The body for `alterations`.
    pub fn from_alterations(alterations: &[ColumnAlteration]) -> Result<Self> {
        let alterations = alterations
            .iter()
            .map(|a| {
                Ok(AlterationBody {
                    path: a.path.clone(),
                    rename: a.rename.clone(),
                    nullable: a.nullable,
                    data_type: a
                        .data_type
                        .as_ref()
                        .map(json_schema::type_json)
                        .transpose()?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self { alterations })
    }
}

/// `drop_columns/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropColumnsBody {
    /// The columns.
    pub columns: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_read_as_the_official_clients_send_them() {
        let b: AddColumnsBody =
            serde_json::from_value(json!({"new_columns":[{"expression":"id * 2","name":"x"}]}))
                .expect("add");
        assert_eq!(
            b.to_new_columns().expect("cols"),
            NewColumns::Sql(vec![("x".into(), "id * 2".into())])
        );
        let c: AddColumnsBody =
            serde_json::from_value(json!({"new_columns":[{"computed":"id + 1","name":"c"}]}))
                .expect("computed");
        assert!(c.to_new_columns().is_err());
        let a: AlterColumnsBody = serde_json::from_value(json!({"alterations":[
            {"data_type":{"type":"int32"},"path":"id"},
            {"nullable":true,"path":"s","rename":"s2"}]}))
        .expect("alter");
        let alts = a.to_alterations().expect("alts");
        assert_eq!(alts[0].data_type, Some(DataType::Int32));
        assert_eq!(alts[1].rename.as_deref(), Some("s2"));
        let back = AlterColumnsBody::from_alterations(&alts).expect("back");
        assert_eq!(
            serde_json::to_value(&back).expect("json"),
            json!({"alterations":[{"data_type":{"type":"int32"},"path":"id"},
                                   {"nullable":true,"path":"s","rename":"s2"}]})
        );
        let nulls = NewColumns::Nulls(vec![arrow_schema::Field::new("z", DataType::Float32, true)]);
        let body = AddColumnsBody::from_new_columns(&nulls).expect("nulls");
        assert_eq!(
            body.new_columns[0].expression.as_deref(),
            Some("CAST(NULL AS FLOAT)")
        );
    }
}
