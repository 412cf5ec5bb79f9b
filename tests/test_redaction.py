"""The redactor: every encoding of a secret, inside any text, and JSON values."""

from __future__ import annotations

import base64
import io
import json

import pytest

from evaluator.redaction import MASK, RedactingStream, Redactor, encoded_forms
from tests.support.secret_forms import leaked_forms, secret_forms

TOKEN = "tok-5ecret-Zq81/x+y="
HEADER = f"Bearer {TOKEN}"
SECRETS = {"token": TOKEN, "header": HEADER}


@pytest.fixture
def redact() -> Redactor:
    """A redactor of the module's token and header."""
    return Redactor([TOKEN, HEADER])


class TestEveryForm:
    @pytest.mark.parametrize("form", sorted(secret_forms(TOKEN)))
    def test_each_form_of_the_value_inside_text(self, redact: Redactor, form: str) -> None:
        """Each encoded form of a secret inside text is masked, the text around it kept."""
        text = f"prefix {secret_forms(TOKEN)[form]} suffix"
        out = redact(text)
        assert [] == leaked_forms(out, SECRETS)
        assert out.startswith("prefix ") and out.endswith(" suffix") and MASK in out

    @pytest.mark.parametrize("form", sorted(secret_forms(HEADER)))
    def test_each_form_of_the_whole_header_value(self, redact: Redactor, form: str) -> None:
        """Each encoded form of a whole header value is masked."""
        assert [] == leaked_forms(redact(secret_forms(HEADER)[form]), SECRETS)

    @pytest.mark.parametrize("prefix", ["", "u:", "us:", "user:"])
    def test_base64_of_a_longer_text_holding_the_secret(
        self, redact: Redactor, prefix: str
    ) -> None:
        """Basic auth: base64("user:" + secret) at each alignment; what is left of the
        secret cannot be decoded back to it."""
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            blob = encode(f"{prefix}{TOKEN} tail".encode()).decode()
            out = redact(f"Authorization: Basic {blob}")
            assert MASK in out
            kept = out.rpartition(" ")[2].replace(MASK, "")
            assert TOKEN[2:-2] not in base64.b64decode(kept + "===", altchars=b"-_").decode(
                "latin-1"
            )

    def test_lower_case_percent_hex(self, redact: Redactor) -> None:
        """Lower-case percent-encoding of a secret is masked."""
        assert MASK == redact("tok-5ecret-Zq81%2fx%2by%3d")

    def test_no_secret_is_identity(self) -> None:
        """Without secrets redaction changes nothing."""
        assert "abc" == Redactor([""])("abc")
        assert not Redactor([])
        assert set() == encoded_forms("")


class TestJson:
    def test_nested_values_and_keys(self, redact: Redactor) -> None:
        """Secrets are masked in nested JSON values and keys, other values kept."""
        data = {"answer": f"echo {TOKEN}", "ids": [TOKEN, "d1"], TOKEN: {"x": [HEADER]}, "n": 1}
        out = redact.redact_json(data)
        assert [] == leaked_forms(json.dumps(out), SECRETS)
        assert out["ids"][1] == "d1" and out["n"] == 1

    def test_clean_data_is_returned_as_is(self, redact: Redactor) -> None:
        """Clean JSON data is returned as is."""
        data = {"answer": "fine", "ids": ["a"]}
        assert redact.redact_json(data) is data

    def test_quote_and_backslash_secret_found_through_json_escaping(self) -> None:
        """A secret with quotes and backslashes is found through JSON escaping."""
        secret = 'a"b\\c/d'
        out = Redactor([secret]).redact_json({"k": f"x{secret}y"})
        assert {"k": f"x{MASK}y"} == out


def test_stream_redacts_each_write() -> None:
    """A redacting stream masks secrets in each write."""
    inner = io.StringIO()
    stream = RedactingStream(inner)
    from evaluator.redaction import register_secrets

    register_secrets(["stream-secret-1"])
    print("token stream-secret-1 here", file=stream)
    assert f"token {MASK} here\n" == inner.getvalue()


class TestTriePattern:
    def test_longest_word_wins_and_every_word_matches(self) -> None:
        """The trie pattern matches every word, the longest first."""
        import re

        from evaluator.redaction import trie_pattern

        words = ["ab", "abc", "abd", "b", "a+b", "x/y="]
        pattern = re.compile(trie_pattern(words))
        for word in words:
            match = pattern.search(f"--{word}--")
            assert match is not None and word == match.group(0)
        assert ["abc", "b"] == pattern.findall("abc b")

    def test_a_secret_of_60000_characters(self) -> None:
        """A header value of 60,000 combining marks (a secret: every header value is one) is
        redacted, not a RecursionError of the prefix tree at ``check``."""
        secret = "e" + "\u0301" * 60_000
        redactor = Redactor([secret])
        assert redactor.redact_text(f"<{secret}>") == f"<{MASK}>"


class TestCredentialParts:
    """A credential's parts travel on their own: each is masked in every form too."""

    def test_basic_credentials_decoded(self) -> None:
        """Basic credentials are masked decoded, the password alone included, the user name
        alone not."""
        header = "Basic " + base64.b64encode(b"alice:pa55-w0rd&<x>").decode()
        redact = Redactor([header])
        for text in ("alice:pa55-w0rd&<x>", "pa55-w0rd&<x>", "pa55-w0rd&amp;&lt;x&gt;"):
            assert MASK in redact(text) and "pa55" not in redact(text), text
        assert "alice" == redact("alice")  # a user name alone is not a secret

    def test_url_userinfo(self) -> None:
        """A URL's user information yields its secrets, decoded."""
        from evaluator.redaction import derived_secrets

        found = derived_secrets("https://bob:s3cr%40t-99@rag.internal/query")
        assert {"bob:s3cr@t-99", "s3cr@t-99"} == found
        redact = Redactor(found)
        assert "pw *** here" == redact("pw s3cr%40t-99 here")
        assert set() == derived_secrets("https://rag.internal/query")

    def test_target_url_userinfo_is_registered(self) -> None:
        """A target URL's user information is registered as a secret."""
        from evaluator.redaction import redactor
        from evaluator.targets.request import RequestTemplate

        RequestTemplate.from_config(url="https://svc:userinfo-pw-31@rag.internal/q")
        assert "userinfo-pw-31" not in redactor().redact_text("echo userinfo-pw-31")

    @pytest.mark.parametrize(
        "name",
        ["api_key", "sig", "code", "X-Functions-Key", "X-Auth-Key", "X-Amz-Signature", "apikey"],
    )
    def test_names_that_say_they_hold_a_secret(self, name: str) -> None:
        """Names that say they hold a secret are secret names."""
        from evaluator.redaction import is_secret_name

        assert is_secret_name(name)

    def test_ordinary_names_are_not_secrets(self) -> None:
        """Ordinary names are not secret names."""
        from evaluator.redaction import is_secret_name

        assert not any(is_secret_name(n) for n in ("question", "top_k", "Accept", "lang"))

    def test_mixed_character_escapes(self) -> None:
        """Each character written its own way, as a template engine or a JSON encoder may."""
        redact = Redactor([TOKEN])
        mixed = "".join(
            (f"&#{ord(c)};", f"\\u{ord(c):04X}", f"%{ord(c):02x}", c)[i % 4]
            for i, c in enumerate(TOKEN)
        )
        assert "x *** y" == redact(f"x {mixed} y")

    @pytest.mark.parametrize("where", ["start", "middle", "end"])
    def test_escaped_secret_found_anywhere_in_a_long_text(self, where: str) -> None:
        """The character-wise pass runs only around escapes: still finds them anywhere."""
        redact = Redactor([TOKEN])
        escaped = "".join(f"&#{ord(c)};" for c in TOKEN)
        filler = "plain words, 50% of them, " * 400
        text = {"start": escaped + filler, "middle": filler + escaped + filler}.get(
            where, filler + escaped
        )
        out = redact(text)
        assert escaped not in out and MASK in out
        assert out.count("50% of them") == text.count("50% of them")  # the rest untouched
