//! Go's `time.ParseDuration` and `Duration.String`, for the `metav1.Duration` fields of the
//! configuration (values and error messages as kube-scheduler prints them).

const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// `time.ParseDuration`: nanoseconds.
pub fn parse(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", quote(orig));
    let mut s = orig;
    let mut neg = false;
    if let Some(rest) = s.strip_prefix('-') {
        neg = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let mut v: u64 = 0;
        for b in s[..int_len].bytes() {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .ok_or_else(invalid)?;
        }
        s = &s[int_len..];
        let (mut frac, mut scale, mut frac_len) = (0u64, 1f64, 0);
        if let Some(rest) = s.strip_prefix('.') {
            s = rest;
            frac_len = s.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for b in s[..frac_len].bytes() {
                if overflow {
                    continue;
                }
                match frac
                    .checked_mul(10)
                    .and_then(|f| f.checked_add(u64::from(b - b'0')))
                {
                    Some(f) if f < 1 << 63 => {
                        frac = f;
                        scale *= 10.0;
                    }
                    _ => overflow = true,
                }
            }
            s = &s[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let Some(&(_, mult)) = UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                quote(unit),
                quote(orig)
            ));
        };
        let mut part = v
            .checked_mul(mult)
            .filter(|p| *p <= 1 << 63)
            .ok_or_else(invalid)?;
        if frac > 0 {
            part += (frac as f64 * (mult as f64 / scale)) as u64;
            if part > 1 << 63 {
                return Err(invalid());
            }
        }
        total = total
            .checked_add(part)
            .filter(|t| *t <= 1 << 63)
            .ok_or_else(invalid)?;
    }
    if neg {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    i64::try_from(total).map_err(|_| invalid())
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `fmt` of a fraction: `v / 10^prec` with trailing zeros dropped.
fn with_fraction(v: u64, prec: u32) -> String {
    let div = 10u64.pow(prec);
    let (int, frac) = (v / div, v % div);
    if frac == 0 {
        return int.to_string();
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// `Duration.String`.
pub fn format(d: i64) -> String {
    if d == 0 {
        return "0s".into();
    }
    let sign = if d < 0 { "-" } else { "" };
    let u = d.unsigned_abs();
    if u < 1_000_000_000 {
        return match u {
            0..1_000 => format!("{sign}{u}ns"),
            1_000..1_000_000 => format!("{sign}{}µs", with_fraction(u, 3)),
            _ => format!("{sign}{}ms", with_fraction(u, 6)),
        };
    }
    let secs = with_fraction(u % 60_000_000_000, 9);
    let minutes = u / 60_000_000_000;
    if minutes == 0 {
        return format!("{sign}{secs}s");
    }
    let hours = minutes / 60;
    if hours == 0 {
        return format!("{sign}{minutes}m{secs}s");
    }
    format!("{sign}{hours}h{}m{secs}s", minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_go() {
        assert_eq!(parse("15s"), Ok(15_000_000_000));
        assert_eq!(parse("1h2m3.5s"), Ok(3_723_500_000_000));
        assert_eq!(parse("-1.5ms"), Ok(-1_500_000));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("300us"), Ok(300_000));
        assert_eq!(parse(""), Err("time: invalid duration \"\"".into()));
        assert_eq!(
            parse("10"),
            Err("time: missing unit in duration \"10\"".into())
        );
        assert_eq!(
            parse("3d"),
            Err("time: unknown unit \"d\" in duration \"3d\"".into())
        );
        assert_eq!(parse(".s"), Err("time: invalid duration \".s\"".into()));
    }

    #[test]
    fn formats_as_go() {
        assert_eq!(format(0), "0s");
        assert_eq!(format(15_000_000_000), "15s");
        assert_eq!(format(3_600_000_000_000), "1h0m0s");
        assert_eq!(format(120_000_000_000), "2m0s");
        assert_eq!(format(-1_500_000), "-1.5ms");
        assert_eq!(format(1_500), "1.5µs");
        assert_eq!(format(2), "2ns");
        assert_eq!(format(3_723_500_000_000), "1h2m3.5s");
    }
}
