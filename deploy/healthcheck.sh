#!/bin/sh
# The container image's health check: GET /healthz on the bot's http.listen,
# read from its config file ($THREADSMITH_CONFIG, default
# /etc/threadsmith/config.yaml). An empty or missing http.listen serves
# nothing to ask: healthy. $THREADSMITH_HEALTHZ_URL, when set, is asked
# instead (http.listen written as ${VAR} or in a flow mapping needs it).
set -eu
url=${THREADSMITH_HEALTHZ_URL:-}
if [ -z "$url" ]; then
	config=${THREADSMITH_CONFIG:-/etc/threadsmith/config.yaml}
	# The first "listen:" inside the top-level "http:" mapping, unquoted.
	listen=$(awk '
		/^[^[:space:]#]/ { top = $1 }
		top == "http:" && $1 == "listen:" {
			v = $2
			gsub(/^["\047]|["\047]$/, "", v)
			print v
			exit
		}' "$config")
	case $listen in
	"" | \#*)
		echo "http.listen is off in $config: no endpoint to check"
		exit 0
		;;
	*'${'*)
		echo "http.listen is $listen in $config: set THREADSMITH_HEALTHZ_URL" >&2
		exit 1
		;;
	esac
	host=${listen%:*}
	port=${listen##*:}
	case $host in
	"" | 0.0.0.0 | "[::]") host=127.0.0.1 ;;
	esac
	url="http://$host:$port/healthz"
fi
exec curl -fsS -o /dev/null --max-time 4 "$url"
