//! The CEL environment of DRA device selectors (`k8s.io/dynamic-resource-allocation/cel`): one
//! variable, `device`, with `driver`, `attributes` and `capacity` (and `allowMultipleAllocations`
//! where consumable capacity is on), plus the Kubernetes library functions selectors use —
//! `semver()` and `quantity()` with their methods, and `cel.bind`. Expressions are parsed and
//! interpreted by the `cel` crate; this module adds the declarations the API server's type
//! checker enforces (so a selector that would not compile is bad input) and reports run-time
//! errors in cel-go's words, since they end up in the FailedScheduling event.

use crate::model::quantity::Quantity;
use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::traits::{Container, Indexer, Iterable, Sizer};
use cel::common::types::{CelBool, CelInt, CelMap, CelMapKey, CelString, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{Context, Env, ExecutionError, Value};
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

/// One attribute value of a device, as the API defines them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Attribute {
    Int(i64),
    Bool(bool),
    String(String),
    /// A semantic version, kept as written (it is compared as written by `matchAttribute`).
    Version(String),
    /// A value kind this release does not read (list-typed attributes are alpha).
    Unsupported,
}

/// What a selector sees of a device. Its name is not part of it: two devices with the same
/// driver, attributes and capacity get the same answer from every selector.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceInput {
    pub driver: String,
    /// Fully qualified names (`domain/id`; a bare id belongs to the driver).
    pub attributes: Vec<(String, Attribute)>,
    pub capacity: Vec<(String, Quantity)>,
    pub allow_multiple_allocations: bool,
}

/// A compiled selector.
#[derive(Debug)]
pub struct Selector {
    program: cel::Program,
}

/// Splits a qualified name into domain and id, the driver being the default domain.
pub fn split_qualified<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    match name.split_once('/') {
        Some((domain, id)) => (domain, id),
        None => (driver, name),
    }
}

static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");
static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");
static ATTRIBUTES_TYPE: Type = Type::new_unspecified_type("kubernetes.DRADeviceDomains");
static DEVICE_TYPE: Type = Type::new_unspecified_type("kubernetes.DRADevice");

/// `semver.Version` as the library wraps it: compared by precedence, build metadata ignored.
#[derive(Clone, Debug)]
struct Semver(semver::Version);

impl Val for Semver {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }
    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Semver>()
            .is_some_and(|o| self.0.cmp_precedence(&o.0).is_eq())
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for Semver {}

#[derive(Clone, Debug)]
struct QuantityVal(Quantity);

impl Val for QuantityVal {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }
    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<QuantityVal>()
            .is_some_and(|o| self.0 == o.0)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for QuantityVal {}

static EMPTY_MAP: LazyLock<CelMap<'static>> = LazyLock::new(CelMap::default);

/// `device.attributes` / `device.capacity`: domain → (id → value). A domain the device has
/// nothing in reads as an empty map, as upstream's map-with-default does.
#[derive(Clone, Debug)]
struct Domains(Arc<CelMap<'static>>);

impl Val for Domains {
    fn get_type(&self) -> &Type {
        &ATTRIBUTES_TYPE
    }
    fn cel_type() -> &'static Type {
        &ATTRIBUTES_TYPE
    }
    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }
    fn as_container(&self) -> Option<&dyn Container> {
        self.0.as_container()
    }
    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        self.0.as_iterable()
    }
    fn as_sizer(&self) -> Option<&dyn Sizer> {
        self.0.as_sizer()
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for Domains {}

impl Indexer for Domains {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        match self.0.get(idx) {
            Err(ExecutionError::NoSuchKey(_)) => Ok(CowVal::Borrowed(&*EMPTY_MAP)),
            other => other,
        }
    }
    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// The `device` variable.
#[derive(Clone, Debug)]
struct Device {
    driver: CelString<'static>,
    attributes: Domains,
    capacity: Domains,
    allow_multiple_allocations: CelBool,
}

impl Val for Device {
    fn get_type(&self) -> &Type {
        &DEVICE_TYPE
    }
    fn cel_type() -> &'static Type {
        &DEVICE_TYPE
    }
    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for Device {}

impl Indexer for Device {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        match idx.downcast_ref::<CelString>().map(CelString::inner) {
            Some("driver") => Ok(CowVal::Borrowed(&self.driver)),
            Some("attributes") => Ok(CowVal::Borrowed(&self.attributes)),
            Some("capacity") => Ok(CowVal::Borrowed(&self.capacity)),
            Some("allowMultipleAllocations") => {
                Ok(CowVal::Borrowed(&self.allow_multiple_allocations))
            }
            Some(other) => Err(ExecutionError::no_such_key(other)),
            None => Err(ExecutionError::UnexpectedType {
                got: idx.get_type().name().to_owned(),
                want: "string".to_owned(),
            }),
        }
    }
    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

fn domains<T>(
    entries: &[(String, T)],
    driver: &str,
    value: impl Fn(&T) -> Result<Box<dyn Val + 'static>, String>,
) -> Result<Domains, String> {
    let mut by_domain: BTreeMap<&str, HashMap<CelMapKey<'static>, Box<dyn Val>>> = BTreeMap::new();
    for (name, v) in entries {
        let (domain, id) = split_qualified(name, driver);
        let v = value(v).map_err(|e| format!("attribute {name}: {e}"))?;
        by_domain
            .entry(domain)
            .or_default()
            .insert(CelMapKey::from(id.to_string()), v);
    }
    let outer: HashMap<CelMapKey<'static>, Box<dyn Val>> = by_domain
        .into_iter()
        .map(|(domain, inner)| {
            (
                CelMapKey::from(domain.to_string()),
                Box::new(CelMap::from(inner)) as Box<dyn Val>,
            )
        })
        .collect();
    Ok(Domains(Arc::new(CelMap::from(outer))))
}

fn parse_semver(text: &str) -> Result<semver::Version, String> {
    semver::Version::parse(text).map_err(|e| e.to_string())
}

impl DeviceInput {
    /// The `device` value; an attribute that cannot be read is the run-time error upstream
    /// reports when it builds the same value.
    fn to_val(&self) -> Result<Device, String> {
        let attributes = domains(&self.attributes, &self.driver, |a| {
            Ok(match a {
                Attribute::Int(i) => Box::new(CelInt::from(*i)),
                Attribute::Bool(b) => Box::new(CelBool::from(*b)),
                Attribute::String(s) => Box::new(CelString::from(s.clone())),
                Attribute::Version(v) => Box::new(Semver(
                    parse_semver(v).map_err(|e| format!("parse semantic version: {e}"))?,
                )),
                Attribute::Unsupported => return Err("unsupported attribute value".into()),
            })
        })?;
        let capacity = domains(&self.capacity, &self.driver, |q| {
            Ok(Box::new(QuantityVal(*q)))
        })?;
        Ok(Device {
            driver: CelString::from(self.driver.clone()),
            attributes,
            capacity,
            allow_multiple_allocations: CelBool::from(self.allow_multiple_allocations),
        })
    }
}

fn arg<'a, T: StaticVal>(args: &'a [CowVal<'_, '_>], i: usize) -> Result<&'a T, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<T>())
        .ok_or(ExecutionError::MissingArgumentOrTarget)
}

fn str_arg<'a>(args: &'a [CowVal<'_, '_>], i: usize) -> Result<&'a str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(CelString::inner)
        .ok_or(ExecutionError::MissingArgumentOrTarget)
}

fn owned<'b, 'v, T: Val + 'v>(v: T) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(v))
}

/// `normalizeAndParse` of the semver library: a leading `v`, leading zeros and missing minor or
/// patch numbers are tolerated.
fn normalize_semver(s: &str) -> Result<semver::Version, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
    for p in parts.iter_mut() {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{trimmed}")
            } else {
                trimmed.to_string()
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".to_string());
    }
    parse_semver(&parts.join("."))
}

fn semver_of(text: &str, normalize: bool) -> Result<semver::Version, String> {
    if normalize {
        normalize_semver(text)
    } else {
        parse_semver(text)
    }
}

fn function_error(name: &str, e: String) -> ExecutionError {
    ExecutionError::function_error(name, e)
}

fn semver_fn<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let normalize = match args.get(1) {
        Some(b) => b
            .downcast_ref::<CelBool>()
            .map(|b| bool::from(*b))
            .unwrap_or(false),
        None => false,
    };
    let v = semver_of(str_arg(&args, 0)?, normalize).map_err(|e| function_error("semver", e))?;
    owned(Semver(v))
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let normalize = args
        .get(1)
        .and_then(|b| b.downcast_ref::<CelBool>())
        .is_some_and(|b| bool::from(*b));
    owned(CelBool::from(
        semver_of(str_arg(&args, 0)?, normalize).is_ok(),
    ))
}

fn semver_cmp(args: &[CowVal<'_, '_>]) -> Result<std::cmp::Ordering, ExecutionError> {
    Ok(arg::<Semver>(args, 0)?
        .0
        .cmp_precedence(&arg::<Semver>(args, 1)?.0))
}

fn semver_greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(semver_cmp(&args)?.is_gt()))
}
fn semver_less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(semver_cmp(&args)?.is_lt()))
}
fn semver_compare<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelInt::from(semver_cmp(&args)? as i64))
}
fn semver_major<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelInt::from(arg::<Semver>(&args, 0)?.0.major as i64))
}
fn semver_minor<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelInt::from(arg::<Semver>(&args, 0)?.0.minor as i64))
}
fn semver_patch<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelInt::from(arg::<Semver>(&args, 0)?.0.patch as i64))
}

fn quantity_fn<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = Quantity::parse(str_arg(&args, 0)?)
        .map_err(|e| function_error("quantity", e.to_string()))?;
    owned(QuantityVal(q))
}
fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(Quantity::parse(str_arg(&args, 0)?).is_ok()))
}
fn quantity_cmp(args: &[CowVal<'_, '_>]) -> Result<std::cmp::Ordering, ExecutionError> {
    Ok(arg::<QuantityVal>(args, 0)?
        .0
        .cmp(&arg::<QuantityVal>(args, 1)?.0))
}
fn quantity_greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(quantity_cmp(&args)?.is_gt()))
}
fn quantity_less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(quantity_cmp(&args)?.is_lt()))
}
fn quantity_compare<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelInt::from(quantity_cmp(&args)? as i64))
}
fn quantity_sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelInt::from(arg::<QuantityVal>(&args, 0)?.0.signum()))
}
fn quantity_is_integer<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(
        arg::<QuantityVal>(&args, 0)?.0.as_int64().is_some(),
    ))
}
fn quantity_as_integer<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match arg::<QuantityVal>(&args, 0)?.0.as_int64() {
        Some(i) => owned(CelInt::from(i)),
        None => Err(function_error(
            "asInteger",
            "cannot convert value to integer".into(),
        )),
    }
}
fn quantity_as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(cel::common::types::CelDouble::from(
        arg::<QuantityVal>(&args, 0)?.0.nanos() as f64 / 1e9,
    ))
}
fn quantity_operand(args: &[CowVal<'_, '_>]) -> Result<Quantity, ExecutionError> {
    match args.get(1).and_then(|a| a.downcast_ref::<CelInt>()) {
        Some(i) => Ok(Quantity::from_units(i64::from(*i))),
        None => Ok(arg::<QuantityVal>(args, 1)?.0),
    }
}
fn quantity_add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg::<QuantityVal>(&args, 0)?.0;
    owned(QuantityVal(q + quantity_operand(&args)?))
}
fn quantity_sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = arg::<QuantityVal>(&args, 0)?.0;
    owned(QuantityVal(q - quantity_operand(&args)?))
}

/// `cel.bind(var, init, result)` (`ext.Bindings`): `result` with `var` bound to `init`, as a
/// comprehension over nothing whose accumulator is `var`.
fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
        return Ok(None);
    }
    let var = match &args[0].expr {
        Expr::Ident(name) => name.clone(),
        _ => {
            return Err(helper.new_error(
                args[0].id,
                "cel.bind() variable names must be simple identifiers",
            ));
        }
    };
    let result = args.pop().expect("three arguments");
    let init = args.pop().expect("three arguments");
    let iter_range = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let loop_cond = helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into())));
    let loop_step = helper.next_expr(Expr::Ident(var.clone()));
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(
        ComprehensionExpr {
            iter_range,
            iter_var: "#unused".to_string(),
            iter_var2: None,
            accu_var: var,
            accu_init: init,
            loop_cond,
            loop_step,
            result,
        },
    )))))
}

type Overload = for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError>;

/// The environment, built once: the standard library, the strings extension, and the
/// Kubernetes libraries selectors use.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    use cel::common::types::{BOOL_TYPE, INT_TYPE, STRING_TYPE};
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)
        .expect("the strings extension declares each overload once");
    let global: [(&str, &str, Vec<Type>, Overload); 6] = [
        ("semver", "string_to_semver", vec![STRING_TYPE], semver_fn),
        (
            "semver",
            "string_bool_to_semver",
            vec![STRING_TYPE, BOOL_TYPE],
            semver_fn,
        ),
        ("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver),
        (
            "isSemver",
            "is_semver_string_bool",
            vec![STRING_TYPE, BOOL_TYPE],
            is_semver,
        ),
        (
            "quantity",
            "string_to_quantity",
            vec![STRING_TYPE],
            quantity_fn,
        ),
        (
            "isQuantity",
            "is_quantity_string",
            vec![STRING_TYPE],
            is_quantity,
        ),
    ];
    for (name, id, args, f) in global {
        env.add_overload(name, id, args, f)
            .expect("each overload is declared once");
    }
    let semver_t = || SEMVER_TYPE.to_owned();
    let quantity_t = || QUANTITY_TYPE.to_owned();
    let member: Vec<(&str, &str, Type, Vec<Type>, Overload)> = vec![
        (
            "isGreaterThan",
            "semver_is_greater_than",
            semver_t(),
            vec![semver_t()],
            semver_greater,
        ),
        (
            "isLessThan",
            "semver_is_less_than",
            semver_t(),
            vec![semver_t()],
            semver_less,
        ),
        (
            "compareTo",
            "semver_compare_to",
            semver_t(),
            vec![semver_t()],
            semver_compare,
        ),
        ("major", "semver_major", semver_t(), vec![], semver_major),
        ("minor", "semver_minor", semver_t(), vec![], semver_minor),
        ("patch", "semver_patch", semver_t(), vec![], semver_patch),
        ("sign", "quantity_sign", quantity_t(), vec![], quantity_sign),
        (
            "isGreaterThan",
            "quantity_is_greater_than",
            quantity_t(),
            vec![quantity_t()],
            quantity_greater,
        ),
        (
            "isLessThan",
            "quantity_is_less_than",
            quantity_t(),
            vec![quantity_t()],
            quantity_less,
        ),
        (
            "compareTo",
            "quantity_compare_to",
            quantity_t(),
            vec![quantity_t()],
            quantity_compare,
        ),
        (
            "asApproximateFloat",
            "quantity_get_float",
            quantity_t(),
            vec![],
            quantity_as_float,
        ),
        (
            "asInteger",
            "quantity_get_int",
            quantity_t(),
            vec![],
            quantity_as_integer,
        ),
        (
            "isInteger",
            "quantity_is_integer",
            quantity_t(),
            vec![],
            quantity_is_integer,
        ),
        (
            "add",
            "quantity_add",
            quantity_t(),
            vec![quantity_t()],
            quantity_add,
        ),
        (
            "add",
            "quantity_add_int",
            quantity_t(),
            vec![INT_TYPE],
            quantity_add,
        ),
        (
            "sub",
            "quantity_sub",
            quantity_t(),
            vec![quantity_t()],
            quantity_sub,
        ),
        (
            "sub",
            "quantity_sub_int",
            quantity_t(),
            vec![INT_TYPE],
            quantity_sub,
        ),
    ];
    for (name, id, target, args, f) in member {
        env.add_member_overload(name, id, target, args, f)
            .expect("each overload is declared once");
    }
    env.add_macro(Macro::receiver("bind", 3, bind_macro))
        .expect("bind is declared once");
    Arc::new(env)
});

/// Global functions an expression may call, besides operators and the declared overloads.
const STANDARD_FUNCTIONS: &[&str] = &[
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "semver",
    "isSemver",
    "quantity",
    "isQuantity",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "major",
    "minor",
    "patch",
    "sign",
    "asApproximateFloat",
    "asInteger",
    "isInteger",
    "add",
    "sub",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "strings.quote",
    "reverse",
];

/// Type names an expression may mention (`type(x) == int`).
const TYPE_NAMES: &[&str] = &[
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// The static part of cel-go's checker this environment can decide without types: names must
/// be declared, `device` has exactly its fields, and a literal result must be a bool.
struct Checker {
    device_fields: &'static [&'static str],
}

impl Checker {
    fn check(&self, e: &IdedExpr, scope: &mut Vec<String>) -> Result<(), String> {
        match &e.expr {
            Expr::Ident(name) => {
                if name == "device"
                    || name.starts_with('@')
                    || name.starts_with('#')
                    || scope.iter().any(|s| s == name)
                    || TYPE_NAMES.contains(&name.as_str())
                {
                    Ok(())
                } else {
                    Err(format!(
                        "undeclared reference to '{name}' (in container '')"
                    ))
                }
            }
            Expr::Select(s) => {
                if let Expr::Ident(root) = &s.operand.expr
                    && root == "device"
                    && !scope.iter().any(|v| v == "device")
                    && !self.device_fields.contains(&s.field.as_str())
                {
                    return Err(format!("undefined field '{}'", s.field));
                }
                self.check(&s.operand, scope)
            }
            Expr::Call(c) => {
                let name = c.func_name.as_str();
                let known = name.starts_with('_')
                    || name.starts_with('@')
                    || name == "!_"
                    || STANDARD_FUNCTIONS.contains(&name);
                if !known {
                    return Err(format!(
                        "undeclared reference to '{name}' (in container '')"
                    ));
                }
                if let Some(t) = &c.target {
                    self.check(t, scope)?;
                }
                c.args.iter().try_for_each(|a| self.check(a, scope))
            }
            Expr::Comprehension(c) => {
                self.check(&c.iter_range, scope)?;
                self.check(&c.accu_init, scope)?;
                let depth = scope.len();
                scope.push(c.iter_var.clone());
                scope.extend(c.iter_var2.clone());
                scope.push(c.accu_var.clone());
                let r = self
                    .check(&c.loop_cond, scope)
                    .and_then(|()| self.check(&c.loop_step, scope))
                    .and_then(|()| self.check(&c.result, scope));
                scope.truncate(depth);
                r
            }
            Expr::List(l) => l.elements.iter().try_for_each(|x| self.check(x, scope)),
            Expr::Map(m) => m.entries.iter().try_for_each(|entry| match &entry.expr {
                cel::common::ast::EntryExpr::MapEntry(me) => {
                    self.check(&me.key, scope)?;
                    self.check(&me.value, scope)
                }
                cel::common::ast::EntryExpr::StructField(f) => self.check(&f.value, scope),
            }),
            Expr::Struct(_) => Err("struct literals are not supported here".into()),
            Expr::Literal(_) | Expr::Unspecified => Ok(()),
        }
    }

    /// The result type where it is known without a type checker: a literal, or a `device`
    /// field of known type.
    fn result_type(e: &IdedExpr) -> Option<&'static str> {
        match &e.expr {
            Expr::Literal(LiteralValue::Boolean(_)) => None,
            Expr::Literal(LiteralValue::Int(_)) => Some("int"),
            Expr::Literal(LiteralValue::UInt(_)) => Some("uint"),
            Expr::Literal(LiteralValue::Double(_)) => Some("double"),
            Expr::Literal(LiteralValue::String(_)) => Some("string"),
            Expr::Literal(LiteralValue::Bytes(_)) => Some("bytes"),
            Expr::Literal(LiteralValue::Null) => Some("null_type"),
            Expr::List(_) => Some("list(dyn)"),
            Expr::Map(_) => Some("map(dyn, dyn)"),
            Expr::Select(s) if matches!(&s.operand.expr, Expr::Ident(r) if r == "device") => {
                match s.field.as_str() {
                    "driver" => Some("string"),
                    "attributes" => Some("map(string, map(string, any))"),
                    "capacity" => Some("map(string, map(string, kubernetes.Quantity))"),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

impl Selector {
    /// Compiles a selector as the API server does on create: a parse error, an undeclared name
    /// or a non-boolean result is an error, in cel-go's words where they matter.
    /// `allow_multiple_allocations` declares `device.allowMultipleAllocations`
    /// (DRAConsumableCapacity).
    pub fn compile(expression: &str, allow_multiple_allocations: bool) -> Result<Selector, String> {
        let program = ENV
            .compile(expression)
            .map_err(|e| format!("compilation failed: {e}"))?;
        let checker = Checker {
            device_fields: if allow_multiple_allocations {
                &[
                    "driver",
                    "attributes",
                    "capacity",
                    "allowMultipleAllocations",
                ]
            } else {
                &["driver", "attributes", "capacity"]
            },
        };
        let root = program.expression();
        checker
            .check(root, &mut Vec::new())
            .map_err(|e| format!("compilation failed: ERROR: <input>: {e}"))?;
        if let Some(t) = Checker::result_type(root) {
            return Err(format!(
                "must evaluate to bool or the unknown type, not {t}"
            ));
        }
        Ok(Selector { program })
    }

    /// Evaluates the selector for one device. An error is the text upstream puts after
    /// "CEL runtime error: ".
    pub fn matches(&self, device: &DeviceInput) -> Result<bool, String> {
        let device = device.to_val()?;
        let mut ctx = Context::with_env(ENV.clone());
        ctx.add_variable_as_val("device", Box::new(device));
        match self.program.execute(&ctx) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!(
                "CEL result of type {} could not be converted to bool",
                other.type_of()
            )),
            Err(e) => Err(runtime_error(&e)),
        }
    }
}

/// cel-go's wording of a run-time error.
fn runtime_error(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload(o) => o.to_string(),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::UnsupportedBinaryOperator(op, l, r) => {
            let name = match *op {
                "add" => "_+_",
                "sub" => "_-_",
                "mul" => "_*_",
                "div" => "_/_",
                "rem" => "_%_",
                other => other,
            };
            format!(
                "found no matching overload for '{name}' applied to '({}, {})'",
                l.type_of(),
                r.type_of()
            )
        }
        other => other.to_string(),
    }
}

/// Names referenced by the expression, for tests.
#[cfg(test)]
fn referenced(selector: &Selector) -> std::collections::HashSet<String> {
    selector
        .program
        .references()
        .variables()
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(attrs: &[(&str, Attribute)], capacity: &[(&str, &str)]) -> DeviceInput {
        DeviceInput {
            driver: "gpu.example.com".into(),
            attributes: attrs
                .iter()
                .map(|(n, a)| (n.to_string(), a.clone()))
                .collect(),
            capacity: capacity
                .iter()
                .map(|(n, q)| (n.to_string(), Quantity::parse(q).unwrap()))
                .collect(),
            allow_multiple_allocations: false,
        }
    }

    fn eval(expr: &str, d: &DeviceInput) -> Result<bool, String> {
        Selector::compile(expr, false).unwrap().matches(d)
    }

    #[test]
    fn attributes_default_to_the_driver_domain() {
        let d = gpu(
            &[
                ("model", Attribute::String("a100".into())),
                ("example.com/numa", Attribute::Int(1)),
            ],
            &[],
        );
        assert_eq!(
            eval(
                r#"device.attributes["gpu.example.com"].model == "a100""#,
                &d
            ),
            Ok(true)
        );
        assert_eq!(
            eval(r#"device.attributes["example.com"].numa == 1"#, &d),
            Ok(true)
        );
        assert_eq!(eval(r#"device.driver == "gpu.example.com""#, &d), Ok(true));
        assert_eq!(
            eval(r#"device.attributes["gpu.example.com"].memory > 1"#, &d),
            Err("no such key: memory".into())
        );
        assert_eq!(
            eval(r#"device.attributes["other.com"].x == 1"#, &d),
            Err("no such key: x".into()),
            "an unknown domain is an empty map"
        );
        assert_eq!(
            eval(r#"has(device.attributes["other.com"].x)"#, &d),
            Ok(false)
        );
        assert_eq!(
            eval(r#""model" in device.attributes["gpu.example.com"]"#, &d),
            Ok(true)
        );
    }

    #[test]
    fn an_error_on_one_side_of_a_decided_logical_operator_is_absorbed() {
        let d = gpu(&[], &[]);
        let missing = r#"device.attributes["gpu.example.com"].model == "x""#;
        assert_eq!(eval(&format!("false && {missing}"), &d), Ok(false));
        assert_eq!(eval(&format!("{missing} || true"), &d), Ok(true));
        assert!(eval(&format!("{missing} && true"), &d).is_err());
    }

    #[test]
    fn semver_values_compare_by_precedence() {
        let d = gpu(
            &[("driverVersion", Attribute::Version("1.2.3+build".into()))],
            &[],
        );
        let v = r#"device.attributes["gpu.example.com"].driverVersion"#;
        for (expr, want) in [
            (format!(r#"{v}.isGreaterThan(semver("1.2.0"))"#), true),
            (format!(r#"{v}.isLessThan(semver("1.10.0"))"#), true),
            (format!(r#"{v}.compareTo(semver("1.2.3")) == 0"#), true),
            (format!(r#"{v} == semver("1.2.3")"#), true),
            (
                format!("{v}.major() == 1 && {v}.minor() == 2 && {v}.patch() == 3"),
                true,
            ),
            (
                r#"semver("v01.2", true) == semver("1.2.0")"#.to_string(),
                true,
            ),
            (r#"isSemver("1.2")"#.to_string(), false),
            (r#"isSemver("1.2", true)"#.to_string(), true),
        ] {
            assert_eq!(eval(&expr, &d), Ok(want), "{expr}");
        }
    }

    #[test]
    fn capacities_are_quantities() {
        let d = gpu(&[], &[("memory", "80Gi")]);
        let m = r#"device.capacity["gpu.example.com"].memory"#;
        for (expr, want) in [
            (format!(r#"{m}.compareTo(quantity("64Gi")) >= 0"#), true),
            (format!(r#"{m}.isGreaterThan(quantity("100Gi"))"#), false),
            (format!(r#"{m} == quantity("80Gi")"#), true),
            (
                format!(r#"{m}.add(quantity("16Gi")).isLessThan(quantity("97Gi"))"#),
                true,
            ),
            (format!(r#"{m}.asInteger() == 85899345920"#), true),
            (r#"quantity("1.5").isInteger()"#.to_string(), false),
            (
                r#"quantity("1k").sub(1).asInteger() == 999"#.to_string(),
                true,
            ),
        ] {
            assert_eq!(eval(&expr, &d), Ok(want), "{expr}");
        }
    }

    #[test]
    fn bind_names_a_subexpression() {
        let d = gpu(
            &[("a", Attribute::Bool(true)), ("b", Attribute::Int(2))],
            &[],
        );
        assert_eq!(
            eval(
                r#"cel.bind(g, device.attributes["gpu.example.com"], g.a && g.b == 2)"#,
                &d
            ),
            Ok(true)
        );
    }

    #[test]
    fn what_does_not_compile_is_an_error() {
        for (expr, why) in [
            ("device.driver ==", "compilation failed"),
            (
                "devices.driver == \"x\"",
                "undeclared reference to 'devices'",
            ),
            ("device.drivers == \"x\"", "undefined field 'drivers'"),
            ("device.allowMultipleAllocations", "undefined field"),
            (
                "frobnicate(device.driver)",
                "undeclared reference to 'frobnicate'",
            ),
            ("device.driver", "must evaluate to bool"),
            ("1", "must evaluate to bool"),
        ] {
            let e = Selector::compile(expr, false).unwrap_err();
            assert!(e.contains(why), "{expr}: {e}");
        }
        assert!(Selector::compile("device.allowMultipleAllocations", true).is_ok());
        let s = Selector::compile("device.attributes.exists(d, d == \"x\")", false).unwrap();
        assert_eq!(
            referenced(&s),
            std::collections::HashSet::from(["device".to_string(), "d".to_string()])
        );
    }

    #[test]
    fn a_bad_attribute_is_a_runtime_error() {
        let d = gpu(&[("v", Attribute::Version("not-a-version".into()))], &[]);
        let e = eval("true", &d).unwrap_err();
        assert!(e.starts_with("attribute v: parse semantic version:"), "{e}");
    }
}
