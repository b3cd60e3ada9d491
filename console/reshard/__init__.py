"""Resharding: pure plans for split, merge, rescale and make-even (`plan`, `model`, `sample`,
`render`), the AWS limits a plan can break (`limits`), execution against a live stream (`execute`)
and the action log of what was done (`actionlog`)."""
