"""GetRecords answers spread over more pages, as AWS may spread them and no local server does.

`SplitPages(closed_shards).install(backend)` hooks the backend's aiobotocore client at its HTTP
boundary (botocore's before-call/after-call events): the request still goes to the real server,
and its answer is then handed back over several pages:

- a closed shard's last records come with a next iterator, and its end (no iterator, ChildShards)
  only on the following call;
- every page with records is preceded by `empty_pages` empty pages with more to come: nothing
  behind (MillisBehindLatest 0) on a closed shard, behind on an open one;
- with `never_end`, a closed shard is never ended: empty pages with a next iterator, forever, as some
  emulators do.

The extra pages are answered from memory (our own iterator tokens), never sent to the server.
"""

from __future__ import annotations

import itertools
import json
from typing import ClassVar


class _Answered:
    status_code = 200
    headers: ClassVar[dict] = {}


class SplitPages:
    def __init__(self, closed_shards: set[str], *, empty_pages: int = 2, never_end: bool = False) -> None:
        self.closed_shards = closed_shards
        self.empty_pages = empty_pages
        self.never_end = never_end
        self.shard_of: dict[str, str | None] = {}  # iterator -> shard id
        self.answers: dict[str, dict] = {}  # our iterator token -> the page to hand back for it
        self.ends_delayed = 0
        self.empty_pages_given = 0
        self._tokens = itertools.count()

    def install(self, backend) -> SplitPages:
        events = backend._client.meta.events
        events.register("before-call.kinesis.GetShardIterator", self._note_shard)
        events.register("after-call.kinesis.GetShardIterator", self._note_iterator)
        events.register("before-call.kinesis.GetRecords", self._answer_ours)
        events.register("after-call.kinesis.GetRecords", self._spread)
        return self

    def _token(self) -> str:
        return f"split-pages-{next(self._tokens)}"

    def _note_shard(self, params, context, **_) -> None:
        context["split_pages_shard"] = json.loads(params["body"])["ShardId"]

    def _note_iterator(self, http_response, parsed, context, **_) -> None:
        if http_response.status_code < 300:
            self.shard_of[parsed["ShardIterator"]] = context.get("split_pages_shard")

    def _answer_ours(self, params, context, **_):
        iterator = json.loads(params["body"])["ShardIterator"]
        context["split_pages_iterator"] = iterator
        answer = self.answers.pop(iterator, None)
        if iterator.startswith("never-ends-"):
            answer = {"Records": [], "MillisBehindLatest": 0, "NextShardIterator": f"never-ends-{self._token()}"}
        if answer is None:
            return None  # a real iterator: the server answers
        context["split_pages_ours"] = True
        return _Answered(), answer

    def _spread(self, http_response, parsed, context, **_) -> None:
        if context.get("split_pages_ours") or http_response.status_code >= 300:
            return
        shard = self.shard_of.get(context.get("split_pages_iterator", ""))
        following = parsed.get("NextShardIterator")
        if following:
            self.shard_of[following] = shard
        if following is None and self.never_end:
            parsed.pop("ChildShards", None)
            parsed["NextShardIterator"] = following = f"never-ends-{self._token()}"
        if not parsed.get("Records"):
            return
        if following is None:  # the page that ends a closed shard: its records now, its end next call
            token = self._token()
            self.answers[token] = {"Records": [], "MillisBehindLatest": 0, "ChildShards": parsed.pop("ChildShards", [])}
            parsed["NextShardIterator"] = token
            self.ends_delayed += 1
        if self.empty_pages:  # the first empty page is this answer; the records follow the last one
            lag = 0 if shard in self.closed_shards else 1000
            tokens = [self._token() for _ in range(self.empty_pages)]
            for token, following_token in itertools.pairwise(tokens):
                self.answers[token] = {"Records": [], "MillisBehindLatest": lag, "NextShardIterator": following_token}
            self.answers[tokens[-1]] = dict(parsed)
            parsed.clear()
            parsed.update({"Records": [], "MillisBehindLatest": lag, "NextShardIterator": tokens[0]})
            self.empty_pages_given += self.empty_pages
