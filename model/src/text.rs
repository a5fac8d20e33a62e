//! Numbers and lists as messages print them.
//!
//! A message, a label or a help text that lists things from the model (node
//! ids, task names, flows) must stay readable on a model of any size: a
//! 20,000-task chain has 2,000 retry policies, and a report listing all of
//! them is a wall of text nobody reads. [`capped`] keeps the first few and
//! says how many more there are ("… and 1,990 more"); every face shows the
//! same words because the engine writes them.

/// How many items a list in a message, label or help shows before it says
/// how many more there are.
pub const LIST_CAP: usize = 10;

/// `72000000` as `72,000,000`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The items joined with `, `, at most `cap` of them; the rest counted:
/// `` `a`, `b`, … and 1,990 more ``. A cap of zero is read as one, so the
/// reader always sees an example.
pub fn capped<S: AsRef<str>>(items: &[S], cap: usize) -> String {
    let cap = cap.max(1);
    let shown: Vec<&str> = items.iter().take(cap).map(AsRef::as_ref).collect();
    let mut out = shown.join(", ");
    if items.len() > cap {
        out.push_str(&format!(
            ", … and {} more",
            group((items.len() - cap) as u64)
        ));
    }
    out
}

/// `n` things in words, singular or plural: `1 attempt`, `6 attempts`,
/// `2 deliveries` (thousands grouped), never `attempt(s)`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group(n), if n == 1 { one } else { many })
}

/// [`capped`] at [`LIST_CAP`].
pub fn capped_list<S: AsRef<str>>(items: &[S]) -> String {
    capped(items, LIST_CAP)
}

/// `text` cut to its first `max` characters, saying how much was left out:
/// damaged bytes can be megabytes, and a report must stay readable.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!(
            "{}… ({} in all)",
            &text[..at],
            counted(text.len() as u64, "byte", "bytes")
        ),
    }
}

/// `text` safe to print on a terminal, byte for byte as long: every
/// control character but tab, line feed and carriage return becomes `?`
/// (one byte, as C0 controls and DEL are) or `¿` (two bytes, as the C1
/// controls U+0080–U+009F are), so spans into the text stay exact. A model
/// is often someone else's file: an ESC sequence in an attribute value,
/// shown raw in a report's snippet, would retitle, recolour or clear the
/// reader's terminal (and hide the report itself).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r');
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| match c {
            c if !unsafe_char(c) => c,
            c if c.len_utf8() == 1 => '?',
            _ => '¿',
        })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_at_the_same_byte_length() {
        let hostile = "name=\"\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m\"\tok\r\n";
        let shown = printable(hostile);
        assert_eq!(shown, "name=\"?]0;PWNED??[2J¿31m\"\tok\r\n");
        assert_eq!(shown.len(), hostile.len(), "spans into the text stay exact");
        assert!(matches!(
            printable("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn clips_long_text_and_says_how_long_it_was() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééééé", 2), "éé… (10 bytes in all)");
    }

    #[test]
    fn counts_in_words() {
        assert_eq!(counted(1, "attempt", "attempts"), "1 attempt");
        assert_eq!(counted(6, "attempt", "attempts"), "6 attempts");
        assert_eq!(counted(0, "delivery", "deliveries"), "0 deliveries");
        assert_eq!(counted(2_000, "instance", "instances"), "2,000 instances");
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(group(72_000_000), "72,000,000");
        assert_eq!(group(300), "300");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(0), "0");
    }

    #[test]
    fn a_long_list_shows_the_first_ten_and_counts_the_rest() {
        let ids: Vec<String> = (1..=2000).map(|i| format!("`Task_{}`", i * 10)).collect();
        let s = capped_list(&ids);
        assert!(s.starts_with("`Task_10`, `Task_20`, "), "{s}");
        assert!(s.ends_with("`Task_100`, … and 1,990 more"), "{s}");
        assert_eq!(s.matches('`').count(), 20);
    }

    #[test]
    fn a_short_list_is_whole() {
        assert_eq!(capped_list(&["a", "b"]), "a, b");
        assert_eq!(capped(&["a", "b", "c"], 3), "a, b, c");
        assert_eq!(capped(&["a", "b", "c"], 2), "a, b, … and 1 more");
        assert_eq!(capped(&["a", "b"], 0), "a, … and 1 more");
        assert_eq!(capped::<&str>(&[], 5), "");
    }
}
