"""Project commands for `scrapy` (COMMANDS_MODULE): `crawl` with argument checks and honest exit codes."""
