#!/bin/sh
# ann signs in from Paris, then from New York ten minutes later (an impossible trip), then one more
# event moves the rule's watermark past both. Timestamps are now, so the 24 h risk is current.
# With hooklog.yaml's allowed_lateness_ms: 0, a second run (another user) half a minute later sends sign-ins
# older than the first run's last event: they are late, so the stateful rule does not take them; hooklog logs
# and counts them and `hooklog status` shows them (docs/respond/response.md, "Lateness").
# Usage: HOOK_SECRET=… ./impossible-travel.sh [user] [hooklog URL]   (default URL: hooklog.yaml's, by HOOKLOG_PORT)
user=${1:-ann}
url=${2:-http://127.0.0.1:${HOOKLOG_PORT:-8080}}
at() { date -u -d "$1" +%Y-%m-%dT%H:%M:%S.000Z; }
uuid() { cat /proc/sys/kernel/random/uuid; }
signin() { # published lat lon
  printf '{"uuid":"%s","published":"%s","eventType":"user.session.start","outcome":{"result":"SUCCESS"},' "$(uuid)" "$1"
  printf '"actor":{"id":"00u%s","alternateId":"%s@example.com","type":"User"},' "$user" "$user"
  printf '"client":{"geographicalContext":{"geolocation":{"lat":%s,"lon":%s}}}}' "$2" "$3"
}
events="$(signin "$(at '-11 min')" 48.8566 2.3522),$(signin "$(at '-1 min')" 40.7128 -74.006)"
events="$events,{\"uuid\":\"$(uuid)\",\"published\":\"$(at '-1 sec')\",\"eventType\":\"system.tick\"}"
curl -s -o /dev/null -w '%{http_code}\n' "$url/hooks/events/okta-main" \
  -H "authorization: $HOOK_SECRET" -H 'content-type: application/json' \
  -d "{\"eventType\":\"com.okta.event_hook\",\"eventTypeVersion\":\"1.0\",\"cloudEventsVersion\":\"0.1\",\"source\":\"$url\",\"eventId\":\"$(uuid)\",\"eventTime\":\"$(at now)\",\"contentType\":\"application/json\",\"data\":{\"events\":[$events]}}"
