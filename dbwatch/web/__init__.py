"""The read-only web dashboard of `dbwatch watch --http` and the state queries it shares with
`dbwatch status` / `dbwatch history`."""
