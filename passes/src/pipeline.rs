//! Textual pipelines, MLIR's syntax: `dce,tile-to-gpu{target=sm_90a stages=4},cse`.

/// One element of a pipeline: a pass name and its `key=value` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineElement {
    /// The pass name.
    pub name: String,
    /// Options in the order written.
    pub options: Vec<(String, String)>,
}

/// Parse a pipeline string.
///
/// # Errors
/// A message naming the byte offset of the problem (unbalanced braces, an option without
/// `=`, an empty pass name).
pub fn parse_pipeline(text: &str) -> Result<Vec<PipelineElement>, String> {
    let mut out = vec![];
    let b = text.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // Accept MLIR's `builtin.module(...)` wrapper.
    let trimmed = text.trim();
    if let Some(inner) = trimmed
        .strip_prefix("builtin.module(")
        .and_then(|s| s.strip_suffix(')'))
    {
        return parse_pipeline(inner);
    }
    loop {
        skip_ws(&mut i);
        if i >= b.len() {
            if !out.is_empty() {
                return Err(format!("expected a pass name after ',' at offset {i}"));
            }
            break;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'-' || b[i] == b'_') {
            i += 1;
        }
        if i == start {
            return Err(format!(
                "expected a pass name at offset {start}, found '{}'",
                text[start..].chars().next().unwrap_or(' ')
            ));
        }
        let name = text[start..i].to_string();
        skip_ws(&mut i);
        let mut options = vec![];
        if i < b.len() && b[i] == b'{' {
            let open = i;
            i += 1;
            let close = text[i..]
                .find('}')
                .map(|p| p + i)
                .ok_or_else(|| format!("unbalanced '{{' at offset {open}"))?;
            for word in text[i..close].split_whitespace() {
                let (k, v) = word.split_once('=').ok_or_else(|| {
                    format!("option '{word}' of pass '{name}' needs the form key=value")
                })?;
                if k.is_empty() {
                    return Err(format!(
                        "option '{word}' of pass '{name}' has an empty name"
                    ));
                }
                options.push((k.to_string(), v.to_string()));
            }
            i = close + 1;
            skip_ws(&mut i);
        }
        out.push(PipelineElement { name, options });
        if i >= b.len() {
            break;
        }
        if b[i] != b',' {
            return Err(format!(
                "expected ',' between passes at offset {i}, found '{}'",
                text[i..].chars().next().unwrap_or(' ')
            ));
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options_and_wrapper() {
        let p =
            parse_pipeline("builtin.module(dce, tile-to-gpu{target=sm_90a stages=4},cse)").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[1].name, "tile-to-gpu");
        assert_eq!(
            p[1].options,
            vec![
                ("target".into(), "sm_90a".into()),
                ("stages".into(), "4".into())
            ]
        );
        assert!(parse_pipeline("a{x=1").unwrap_err().contains("unbalanced"));
        assert!(parse_pipeline("a,")
            .unwrap_err()
            .contains("expected a pass name"));
        assert!(parse_pipeline("a{x}").unwrap_err().contains("key=value"));
        assert_eq!(parse_pipeline("").unwrap(), vec![]);
    }
}
