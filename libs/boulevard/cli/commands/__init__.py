"""The `boulevard` command's options and help, one module per group of commands: `up`,
`admin` (tokens, identities, certificates, backups, health), `play` (play and watch),
`reads` and `audits`. `boulevard.cli.app` puts them together; the work of each command
lives in its own module beside this package (`boulevard.cli.up`, `reads`, …)."""
