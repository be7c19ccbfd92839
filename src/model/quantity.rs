//! Kubernetes resource quantities, parsed exactly as `resource.ParseQuantity` does: decimal and
//! binary suffixes, decimal exponents, fractions, magnitudes rounded up to the nanounit. Values are
//! kept exact (in nanounits) so sums round only once, the way the scheduler adds `Quantity`s before
//! asking for `MilliValue()` or `Value()`.

use std::fmt;

const NANO: i128 = 1_000_000_000;
/// `maxAllowed` upstream: binary-suffixed quantities are capped at 2^63-1 units.
const MAX_BINARY_NANOS: i128 = (i64::MAX as i128) * NANO;

/// An exact quantity in nanounits (1 = 1n).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    nanos: i128,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

enum Base {
    Ten,
    Two,
}

fn interpret_suffix(suffix: &str) -> Option<(Base, i32)> {
    Some(match suffix {
        "" => (Base::Ten, 0),
        "n" => (Base::Ten, -9),
        "u" => (Base::Ten, -6),
        "m" => (Base::Ten, -3),
        "k" => (Base::Ten, 3),
        "M" => (Base::Ten, 6),
        "G" => (Base::Ten, 9),
        "T" => (Base::Ten, 12),
        "P" => (Base::Ten, 15),
        "E" => (Base::Ten, 18),
        "Ki" => (Base::Two, 10),
        "Mi" => (Base::Two, 20),
        "Gi" => (Base::Two, 30),
        "Ti" => (Base::Two, 40),
        "Pi" => (Base::Two, 50),
        "Ei" => (Base::Two, 60),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            let exp: i64 = s[1..].parse().ok()?;
            (Base::Ten, i32::try_from(exp).ok()?)
        }
        _ => return None,
    })
}

/// Splits a quantity string as upstream `parseQuantityString` does.
fn split(s: &str) -> Result<(bool, &str, &str, &str), QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    if pos < end {
        match b[0] {
            b'-' => {
                positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok((positive, "0", "", ""));
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == num_start {
        "0"
    } else {
        &s[num_start..pos]
    };
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[denom_start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::FormatWrong);
    }
    Ok((positive, num, denom, &s[suffix_start..]))
}

/// Digits as an integer, saturating; `inexact` reports dropped non-zero digits.
fn digits_value(digits: &str) -> (i128, bool) {
    let mut v: i128 = 0;
    let mut inexact = false;
    for d in digits.bytes() {
        let digit = i128::from(d - b'0');
        match v.checked_mul(10).and_then(|x| x.checked_add(digit)) {
            Some(n) => v = n,
            None => {
                if digit != 0 {
                    inexact = true;
                }
                v = i128::MAX;
            }
        }
    }
    (v, inexact)
}

fn pow10(exp: u32) -> Option<i128> {
    10i128.checked_pow(exp)
}

/// `ceil(v / d)` for non-negative `v` and positive `d`.
fn div_ceil(v: i128, d: i128) -> i128 {
    v / d + i128::from(v % d != 0)
}

impl Quantity {
    pub const ZERO: Quantity = Quantity { nanos: 0 };

    /// Parses a quantity as the API decodes one: surrounding whitespace is trimmed first
    /// (`Quantity.UnmarshalJSON`), then `ParseQuantity`.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        let (positive, num, denom, suffix) = split(s)?;
        let (base, exponent) = interpret_suffix(suffix).ok_or(QuantityError::Suffix)?;
        // The fraction digits beyond what i128 can hold only matter for rounding up.
        let (denom_kept, denom_dropped_nonzero) = if denom.len() > 30 {
            (&denom[..30], denom[30..].bytes().any(|d| d != b'0'))
        } else {
            (denom, false)
        };
        let mut digits = String::with_capacity(num.len() + denom_kept.len());
        digits.push_str(num);
        digits.push_str(denom_kept);
        let (mantissa, mut inexact) = digits_value(&digits);
        inexact |= denom_dropped_nonzero;
        let frac_digits = denom_kept.len() as i64;
        let magnitude = match base {
            Base::Ten => {
                // value = mantissa * 10^(exponent - frac_digits); nanos = value * 10^9
                let shift = i64::from(exponent) - frac_digits + 9;
                if shift >= 0 {
                    let factor = u32::try_from(shift).ok().and_then(pow10);
                    match factor {
                        Some(f) => mantissa.saturating_mul(f),
                        None if mantissa == 0 => 0,
                        None => i128::MAX,
                    }
                } else {
                    match u32::try_from(-shift).ok().and_then(pow10) {
                        Some(d) => div_ceil(mantissa, d) + i128::from(inexact && mantissa % d == 0),
                        None => i128::from(mantissa != 0 || inexact),
                    }
                }
            }
            Base::Two => {
                let scaled = mantissa
                    .saturating_mul(1i128 << exponent)
                    .saturating_mul(NANO);
                let d = pow10(frac_digits as u32).unwrap_or(i128::MAX);
                let v = div_ceil(scaled, d) + i128::from(inexact && scaled % d == 0);
                v.min(MAX_BINARY_NANOS)
            }
        };
        Ok(Quantity {
            nanos: if positive { magnitude } else { -magnitude },
        })
    }

    pub fn from_milli(milli: i64) -> Quantity {
        Quantity {
            nanos: i128::from(milli) * 1_000_000,
        }
    }

    pub fn from_units(units: i64) -> Quantity {
        Quantity {
            nanos: i128::from(units) * NANO,
        }
    }

    pub fn is_zero(self) -> bool {
        self.nanos == 0
    }

    pub fn is_negative(self) -> bool {
        self.nanos < 0
    }

    /// `Quantity.MilliValue()`: thousandths, rounded away from zero, clamped to int64.
    pub fn milli_value(self) -> i64 {
        scaled(self.nanos, 1_000_000)
    }

    /// `Quantity.Value()`: whole units, rounded away from zero, clamped to int64.
    pub fn value(self) -> i64 {
        scaled(self.nanos, NANO)
    }

    /// `Quantity.Sign()`.
    pub fn signum(self) -> i64 {
        self.nanos.signum() as i64
    }

    /// `Quantity.AsInt64()`: the value when it is a whole number that fits an int64.
    pub fn as_int64(self) -> Option<i64> {
        if self.nanos % NANO != 0 {
            return None;
        }
        i64::try_from(self.nanos / NANO).ok()
    }

    /// The value in nanounits, for conversions such as `AsApproximateFloat64()`.
    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// Kubernetes' canonical form (`Quantity.String()`) in the decimal (`DecimalSI`) or binary
    /// (`BinarySI`) format: decimal with the largest suffix that keeps the number whole (`1500m`,
    /// `2`, `1k`); binary as a whole number times the largest power of 1024 dividing it
    /// (`256Mi`), decimal below 1024 or when not whole, as upstream falls back.
    pub fn canonical(self, binary: bool) -> String {
        const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
        const DECIMAL: [(u32, &str); 10] = [
            (27, "E"),
            (24, "P"),
            (21, "T"),
            (18, "G"),
            (15, "M"),
            (12, "k"),
            (9, ""),
            (6, "m"),
            (3, "u"),
            (0, "n"),
        ];
        if self.nanos == 0 {
            return "0".into();
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let abs = self.nanos.unsigned_abs();
        let nano = NANO as u128;
        if binary && abs >= 1024 * nano && abs % nano == 0 {
            let (mut v, mut e) = (abs / nano, 0);
            while e + 1 < BINARY.len() && v % 1024 == 0 {
                v /= 1024;
                e += 1;
            }
            return format!("{sign}{v}{}", BINARY[e]);
        }
        let (power, suffix) = DECIMAL
            .iter()
            .find(|(p, _)| abs % 10u128.pow(*p) == 0)
            .copied()
            .unwrap_or((0, "n"));
        format!("{sign}{}{suffix}", abs / 10u128.pow(power))
    }
}

impl std::ops::Add for Quantity {
    type Output = Quantity;
    fn add(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
        }
    }
}

impl std::ops::Sub for Quantity {
    type Output = Quantity;
    fn sub(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_sub(other.nanos),
        }
    }
}

fn scaled(nanos: i128, per_unit: i128) -> i64 {
    let magnitude = div_ceil(nanos.abs(), per_unit);
    let v = if nanos < 0 { -magnitude } else { magnitude };
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

impl fmt::Display for Quantity {
    /// A plain decimal rendering for messages (not Kubernetes' canonical form).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let abs = self.nanos.abs();
        let (units, frac) = (abs / NANO, abs % NANO);
        if frac == 0 {
            write!(f, "{sign}{units}")
        } else {
            let frac = format!("{frac:09}");
            write!(f, "{sign}{units}.{}", frac.trim_end_matches('0'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn milli(s: &str) -> i64 {
        Quantity::parse(s).unwrap().milli_value()
    }
    fn value(s: &str) -> i64 {
        Quantity::parse(s).unwrap().value()
    }

    #[test]
    fn canonical_forms_are_kubernetes_own() {
        let c = |s: &str, binary: bool| Quantity::parse(s).unwrap().canonical(binary);
        assert_eq!(c("1500m", false), "1500m");
        assert_eq!(c("2000m", false), "2");
        assert_eq!(c("1000", false), "1k");
        assert_eq!(c("1500", false), "1500");
        assert_eq!(c("0", false), "0");
        assert_eq!(c("-250m", false), "-250m");
        assert_eq!(c("1n", false), "1n");
        assert_eq!(c("256Mi", true), "256Mi");
        assert_eq!(c("1536", true), "1536");
        assert_eq!(c("1.5Gi", true), "1536Mi");
        assert_eq!(
            c("1000", true),
            "1k",
            "below 1024 binary falls back to decimal"
        );
        assert_eq!(c("256Mi", false), "268435456");
        assert_eq!(c("4Ei", true), "4Ei");
    }

    #[test]
    fn known_values() {
        assert_eq!(milli("1"), 1000);
        assert_eq!(milli("100m"), 100);
        assert_eq!(milli("0.5"), 500);
        assert_eq!(milli(".5"), 500);
        assert_eq!(milli("1.5"), 1500);
        assert_eq!(milli("2500u"), 3);
        assert_eq!(milli("1n"), 1);
        assert_eq!(milli("0.0001"), 1);
        assert_eq!(milli("1e3"), 1_000_000);
        assert_eq!(milli("1E3"), 1_000_000);
        assert_eq!(milli("1e-3"), 1);
        assert_eq!(value("1Ki"), 1024);
        assert_eq!(value("1Mi"), 1 << 20);
        assert_eq!(value("1.5Gi"), 3 << 29);
        assert_eq!(value("32Gi"), 32 << 30);
        assert_eq!(value("1Ei"), 1 << 60);
        assert_eq!(value("1k"), 1000);
        assert_eq!(value("1M"), 1_000_000);
        assert_eq!(value("1G"), 1_000_000_000);
        assert_eq!(value("1T"), 1_000_000_000_000);
        assert_eq!(value("1P"), 1_000_000_000_000_000);
        assert_eq!(value("1E"), 1_000_000_000_000_000_000);
        assert_eq!(value("129e6"), 129_000_000);
        assert_eq!(value("123Mi"), 123 * (1 << 20));
        assert_eq!(value("0.1"), 1);
        assert_eq!(value("+5"), 5);
        assert_eq!(value("-5"), -5);
        assert_eq!(value("0"), 0);
        assert_eq!(value("000"), 0);
        assert_eq!(value("1.000000000001"), 2);
        assert_eq!(
            Quantity::parse("0.0000000001").unwrap(),
            Quantity::parse("1n").unwrap()
        );
        assert_eq!(value("16Ei"), i64::MAX);
        assert_eq!(value("99999999999999999999"), i64::MAX);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(Quantity::parse(""), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("1x"), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("1.5.5"), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("abc"), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("1K"), Err(QuantityError::Suffix));
        assert_eq!(Quantity::parse("1mi"), Err(QuantityError::Suffix));
        assert_eq!(Quantity::parse("1e"), Err(QuantityError::Suffix));
        assert_eq!(Quantity::parse("1 Gi"), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("  "), Err(QuantityError::FormatWrong));
    }

    #[test]
    fn surrounding_whitespace_is_trimmed_as_the_api_decodes() {
        assert_eq!(milli(" 500m "), 500);
        assert_eq!(value("1Gi \n"), 1 << 30);
    }

    #[test]
    fn sums_round_once() {
        let half_milli = Quantity::parse("500u").unwrap();
        assert_eq!(half_milli.milli_value(), 1);
        assert_eq!((half_milli + half_milli).milli_value(), 1);
    }

    proptest! {
        #[test]
        fn integer_with_decimal_suffix(n in 0i64..1_000_000, suffix in prop::sample::select(vec![("", 0u32), ("k", 3), ("M", 6), ("G", 9)])) {
            let q = Quantity::parse(&format!("{n}{}", suffix.0)).unwrap();
            prop_assert_eq!(q.value(), n * 10i64.pow(suffix.1));
        }

        #[test]
        fn integer_with_binary_suffix(n in 0i64..1_000_000, suffix in prop::sample::select(vec![("Ki", 10u32), ("Mi", 20), ("Gi", 30)])) {
            let q = Quantity::parse(&format!("{n}{}", suffix.0)).unwrap();
            prop_assert_eq!(q.value(), n << suffix.1);
        }

        #[test]
        fn millicores_round_up(whole in 0i64..64, frac in 0u32..1_000_000) {
            // whole.frac (6 digits) cores: millicores are the ceiling of 1000 * value.
            let q = Quantity::parse(&format!("{whole}.{frac:06}")).unwrap();
            let micro = whole * 1_000_000 + i64::from(frac);
            prop_assert_eq!(q.milli_value(), (micro + 999) / 1000);
        }

        #[test]
        fn exponent_equals_suffix(n in 0i64..100_000, e in 0u32..9) {
            let a = Quantity::parse(&format!("{n}e{e}")).unwrap();
            prop_assert_eq!(a.value(), n * 10i64.pow(e));
        }

        #[test]
        fn milli_suffix_roundtrip(m in 0i64..10_000_000) {
            prop_assert_eq!(Quantity::parse(&format!("{m}m")).unwrap().milli_value(), m);
        }

        #[test]
        fn never_panics(s in "[-+0-9.eEinumkKMGTP]{0,12}") {
            let _ = Quantity::parse(&s);
        }
    }
}
