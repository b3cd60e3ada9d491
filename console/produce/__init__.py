"""The ordered producer and its proof: per-key ordered publishing (one record in flight per key),
its ledger, settings, pacing and report, the self-describing test records, and the verifier that
reads them back to check order and placement."""
