use super::*;

#[test]
fn urls_resolve_as_aiperfs() {
    let t = |u: &str| target(u).map(|t| (t.authority, t.path));
    let pair = |a: &str, p: &str| Ok::<_, ChatError>((a.to_string(), p.to_string()));
    assert_eq!(
        t("http://127.0.0.1:8000").ok(),
        pair("127.0.0.1:8000", "/v1/chat/completions").ok()
    );
    assert_eq!(
        t("localhost:9/v1/").ok(),
        pair("localhost:9", "/v1/chat/completions").ok()
    );
    assert_eq!(
        t("h:1/openai").ok(),
        pair("h:1", "/openai/v1/chat/completions").ok()
    );
    assert_eq!(
        t("h/v1/chat/completions").ok(),
        pair("h:80", "/v1/chat/completions").ok()
    );
    assert!(target("https://h:443").is_err());
    assert!(target("http:///v1").is_err());
}

#[test]
fn stats_lines_from_hand_computed_figures() {
    let tok = Tokenizer::builtin();
    // " a a a a" is four tokens in o200k (one per " a"); 100 ms latency, first text at 10 ms:
    // TPS 4 / 0.1 = 40; ITL (100 - 10) / 3 = 30 ms, decode 33.33 tokens/s.
    assert_eq!(tok.count(" a a a a"), 4);
    let turn = Turn {
        content: " a a a a".into(),
        ttft: Some(Duration::from_millis(10)),
        latency: Duration::from_millis(100),
        usage: Some(json!({"prompt_tokens": 8, "prompt_tokens_details": {"cached_tokens": 2}})),
        ..Turn::default()
    };
    assert_eq!(
        stats(&turn, &tok),
        "TTFT: 10.00 ms\nTPS:  40.00 tokens/s (4 tokens in 0.10s)\n\
         ITL:  30.00 ms/token (decode 33.33 tokens/s)\nCache: 2/8 prompt tokens cached (25.0%)"
    );
    assert_eq!(stats(&Turn::default(), &tok), "(no tokens received)");
}
