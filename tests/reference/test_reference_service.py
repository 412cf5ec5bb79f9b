"""The reference service over HTTP (real uvicorn on loopback): contract, retrieval in both
languages, refusals, request validation, health and the failure-mode admin API."""

from __future__ import annotations

import time

import httpx
import pytest

from evaluator.reference.answerer import REFUSALS
from evaluator.reference.app import create_app
from evaluator.reference.failures import KNOWN_MODES, UnknownFailureModeError
from tests.reference.harness import ask

STAGES = ("tokenize", "keyword", "rerank", "model")


@pytest.mark.e2e
class TestContract:
    def test_response_has_the_default_contract_shape(self, client: httpx.Client) -> None:
        """answer, retrieved [{id, score, text}], 1-based citations and stage timings."""
        response = ask(client, "How long is the password reset link valid?", top_k=5)

        assert 200 == response.status_code
        body = response.json()
        assert {"answer", "retrieved", "citations", "timings"} == set(body)
        assert isinstance(body["answer"], str) and body["answer"]
        assert 5 == len(body["retrieved"])
        for item in body["retrieved"]:
            assert {"id", "score", "text"} == set(item)
            assert isinstance(item["id"], str) and isinstance(item["text"], str)
            assert isinstance(item["score"], float)
        scores = [item["score"] for item in body["retrieved"]]
        assert sorted(scores, reverse=True) == scores
        assert body["citations"] and all(1 <= c <= 5 for c in body["citations"])

    def test_timings_are_real_stage_durations(self, client: httpx.Client) -> None:
        """Every stage reports a positive duration, and together they fit in the call."""
        started = time.perf_counter()
        response = ask(client, "退款多久到账？")
        elapsed = time.perf_counter() - started

        timings = response.json()["timings"]
        assert set(STAGES) == set(timings)
        assert all(isinstance(v, float) and v > 0 for v in timings.values())
        assert sum(timings.values()) < elapsed

    @pytest.mark.parametrize("top_k", [1, 3, 10])
    def test_top_k_chunks_are_returned(self, client: httpx.Client, top_k: int) -> None:
        """``top_k`` is the number of retrieved chunks."""
        response = ask(client, "How much does Northwind Plus cost per year?", top_k=top_k)

        assert top_k == len(response.json()["retrieved"])

    def test_top_k_defaults_to_five(self, client: httpx.Client) -> None:
        """A request without ``top_k`` gets five chunks."""
        response = client.post("/rag", json={"question": "积分的有效期是多久？"})

        assert 5 == len(response.json()["retrieved"])


@pytest.mark.e2e
class TestAnswers:
    def test_chinese_question_retrieves_and_quotes_its_chunk(self, client: httpx.Client) -> None:
        """A Chinese question finds its Chinese chunk first, quotes the fact and cites [1]."""
        body = ask(client, "重置密码的邮件链接多久失效？").json()

        assert "account-security-zh-1" == body["retrieved"][0]["id"]
        assert "30分钟" in body["answer"]
        assert [1] == body["citations"]

    def test_english_question_retrieves_and_quotes_its_chunk(self, client: httpx.Client) -> None:
        """An English question finds its English chunk first, quotes the fact and cites [1]."""
        body = ask(client, "How long does standard shipping to Canada take?").json()

        assert "shipping-country-canada-en-1" == body["retrieved"][0]["id"]
        assert "5-8 business days" in body["answer"]
        assert [1] == body["citations"]

    def test_confusers_are_told_apart(self, client: httpx.Client) -> None:
        """The SMS code (10 min) and the reset link (30 min) share a chunk, not an answer."""
        code = ask(client, "短信验证码的有效期是多久？").json()["answer"]
        link = ask(client, "重置密码的邮件链接多久失效？").json()["answer"]

        assert "10分钟" in code
        assert "30分钟" in link

    @pytest.mark.parametrize(
        ("question", "refusal"),
        [("可以用比特币付款吗？", REFUSALS["zh"]), ("Do you accept Bitcoin?", REFUSALS["en"])],
    )
    def test_refuses_without_evidence(
        self, client: httpx.Client, question: str, refusal: str
    ) -> None:
        """With no supporting sentence it refuses in the question's language and cites nothing."""
        body = ask(client, question).json()

        assert refusal == body["answer"]
        assert [] == body["citations"]


@pytest.mark.e2e
class TestRequestValidation:
    @pytest.mark.parametrize(
        "content",
        [
            b"{not json",
            b'["a list"]',
            b"{}",
            b'{"question": ""}',
            b'{"question": "   "}',
            b'{"question": 42}',
            b'{"question": "ok?", "top_k": 0}',
            b'{"question": "ok?", "top_k": 101}',
            b'{"question": "ok?", "top_k": "5"}',
            b'{"question": "ok?", "top_k": true}',
            b'{"question": "ok?", "top_k": 2.5}',
        ],
    )
    def test_bad_request_is_400_with_a_reason(self, client: httpx.Client, content: bytes) -> None:
        """A malformed request is answered 400 with an error message, never 500."""
        response = client.post(
            "/rag", content=content, headers={"content-type": "application/json"}
        )

        assert 400 == response.status_code
        assert response.json()["error"]

    def test_get_says_how_to_ask(self, client: httpx.Client) -> None:
        """GET /rag (the demo banner's link, opened in a browser) is a short page saying how
        to ask, not an answer and not a 405."""
        response = client.get("/rag")
        assert (200, "text/html; charset=utf-8") == (
            response.status_code,
            response.headers["content-type"],
        )
        assert "POST" in response.text and '{"question": "' in response.text
        assert "curl -s -X POST" in response.text and "/rag" in response.text


@pytest.mark.e2e
class TestHealth:
    def test_healthz(self, client: httpx.Client) -> None:
        """/healthz answers 200 with the corpus size and the active failure modes."""
        body = client.get("/healthz").json()

        assert "ok" == body["status"]
        assert 250 <= body["chunks"] <= 350
        assert [] == body["failure_modes"]


class TestAdminApi:
    @pytest.mark.e2e
    def test_get_lists_active_and_known_modes(self, client: httpx.Client) -> None:
        """GET shows the active modes (none) and every known one."""
        body = client.get("/admin/failure-modes").json()

        assert {"modes": [], "known": list(KNOWN_MODES)} == body

    @pytest.mark.e2e
    def test_put_replaces_the_active_set(self, client: httpx.Client) -> None:
        """PUT {"modes": [...]} switches exactly those modes on."""
        client.put("/admin/failure-modes", json={"modes": ["slow_model"]})
        response = client.put(
            "/admin/failure-modes", json={"modes": ["rerank_degraded", "server_errors"]}
        )

        assert 200 == response.status_code
        assert ["rerank_degraded", "server_errors"] == response.json()["modes"]
        assert ["rerank_degraded", "server_errors"] == client.get("/healthz").json()[
            "failure_modes"
        ]

    @pytest.mark.e2e
    def test_put_unknown_mode_is_400_and_changes_nothing(self, client: httpx.Client) -> None:
        """An unknown name is rejected with the known ones listed; the active set stays."""
        client.put("/admin/failure-modes", json={"modes": ["slow_model"]})
        response = client.put(
            "/admin/failure-modes", json={"modes": ["answer_degraded", "retrieval_broke"]}
        )

        assert 400 == response.status_code
        assert "retrieval_broke" in response.json()["error"]
        assert list(KNOWN_MODES) == response.json()["known"]
        assert ["slow_model"] == client.get("/admin/failure-modes").json()["modes"]

    @pytest.mark.e2e
    @pytest.mark.parametrize("body", [{"modes": "slow_model"}, {"modes": [1]}, {}, []])
    def test_put_malformed_body_is_400(self, client: httpx.Client, body: object) -> None:
        """ "modes" must be a list of strings."""
        assert 400 == client.put("/admin/failure-modes", json=body).status_code

    @pytest.mark.e2e
    def test_post_and_delete_flip_one_mode(self, client: httpx.Client) -> None:
        """POST switches one mode on, DELETE switches it off, others untouched."""
        client.post("/admin/failure-modes/slow_model")
        on = client.post("/admin/failure-modes/citations_degraded").json()["modes"]
        off = client.delete("/admin/failure-modes/slow_model").json()["modes"]

        assert ["citations_degraded", "slow_model"] == on
        assert ["citations_degraded"] == off

    @pytest.mark.e2e
    def test_flip_unknown_mode_is_400(self, client: httpx.Client) -> None:
        """Flipping an unknown mode is rejected with the known ones listed."""
        response = client.post("/admin/failure-modes/faster_model")

        assert 400 == response.status_code
        assert list(KNOWN_MODES) == response.json()["known"]

    def test_modes_switch_at_start(self) -> None:
        """create_app takes the modes to start with and rejects unknown ones."""
        app = create_app(["slow_model"])

        assert {"slow_model"} == app.state.rag.failure_modes.active
        with pytest.raises(UnknownFailureModeError):
            create_app(["slow_modle"])
