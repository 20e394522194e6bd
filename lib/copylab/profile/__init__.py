"""Call-graph profiles of the measured window: record (perf record), script (perf script text,
folded stacks), rules (what each function means), classify (buckets per side)."""
