"""The game log's trust layer: players' command signatures, the log's hash chain, the
engine's receipts (`signing`), and the audit that re-runs a game's rules over its log
(`game_log`). Specified in docs/auditing.md, so an auditor can re-implement it."""
