#!/bin/bash
# Runs inside the VM of scripts/systemd-vm, under systemd (PID 1), as root:
#   inside.sh hardware   the box's hardware before vigil.service starts (vigil-vm-hardware.service)
#   inside.sh test       the checks of this boot (vigil-vm-test.service), then reboots or powers off
# The phase is in /root/vmtest/phase: 1 = the first boot (install, set up, SIGSTOP, stop, upgrade),
# 2 = after the reboot. The host reads this boot's verdict from the line
# "vmtest: phase N passed|failed" and the figures from lines {"metric": ...}.
set -u
HERE=/root/vmtest
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8

if [ "${1:-}" = hardware ]; then
  # Crypto the Bluetooth stack asks for (the random-number generator before ECDH), the stack and
  # the virtual-HCI driver; two LE controllers from BlueZ's emulator.
  modprobe -a sha3_generic sha512_generic ctr jitterentropy_rng drbg
  modprobe -a crc16 rfkill ecc ecdh_generic af_alg algif_skcipher algif_hash ecb cmac bluetooth hci_vhci
  btvirt -L -l2 >/dev/null 2>&1 &
  for _ in $(seq 100); do [ -e /sys/class/bluetooth/hci1 ] && break; sleep 0.1; done
  # gpio-sim: an 8-line chip labelled vigil-sim, the button (line 0, active low) released.
  modprobe -a configfs gpio-sim-oot
  mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
  G=/sys/kernel/config/gpio-sim/vigil
  mkdir -p $G/bank0 && echo 8 > $G/bank0/num_lines && echo vigil-sim > $G/bank0/label && echo 1 > $G/live
  sim=/sys/devices/platform/$(cat $G/dev_name)/$(cat $G/bank0/chip_name)
  echo pull-up > "$sim/sim_gpio0/pull"
  echo "$sim" > /run/vigil-vm-gpio-sim
  # The package's udev rule gives the chip to the gpio group: done before the node opens it.
  udevadm settle -t 30
  exit 0
fi

. "$HERE/checks.bash"
PHASE=$(cat "$HERE/phase")
GPIO_SIM=$(cat /run/vigil-vm-gpio-sim 2>/dev/null || echo /nonexistent)
press() { echo pull-down > "$GPIO_SIM/sim_gpio0/pull"; }
release() { echo pull-up > "$GPIO_SIM/sim_gpio0/pull"; }
level() { cat "$GPIO_SIM/sim_gpio$1/value" 2>/dev/null; }
red_is() { [ "$(level 1)" = "$1" ]; }
prop() { systemctl show -P "$1" vigil; }
mono_us() { echo $(( $(uptime_ns) / 1000 )); }   # systemd's *TimestampMonotonic are µs
metric() { echo "{\"metric\":\"$1\",\"value\":$2,\"unit\":\"$3\"}"; }
# The CLI reads the log as the service's user: root would leave files in /var/lib/vigil the
# node could not open.
as_vigil() { runuser -u vigil -- "$@"; }
# events KIND (every kind when empty): the log's events as JSON lines.
events() {
  local kind=(); [ -z "$1" ] || kind=(--kind "$1")
  as_vigil vigil log tail --json -n 100000 "${kind[@]}" --data /var/lib/vigil 2>/dev/null
}
has_event() { events "$1" | grep -q -- "${2:-.}"; }
# still_there WHAT KIND LINE: the log still holds that very event (what it printed before), or
# says what it holds instead. `"hub":"synced"` is the CLI's note of where the event has got to
# since (a box joined to a hub), not part of the event.
unnoted() { sed 's/,"hub":"[a-z-]*"//'; }
still_there() {
  if events "$2" | unnoted | grep -qxF -- "$(echo "$3" | unnoted)"; then ok "$1 is still in the log"; return; fi
  bad "$1 is not in the log as it was: $3"
  echo "     the log's $2 events now:"; events "$2" | tail -n 3 | sed 's/^/     | /'
}
event_count() { events "" | wc -l; }
# kept BEFORE NOW: there were events, and none is gone (a CLI that fails reads 0 and fails this).
kept() { [ "$1" -gt 0 ] && [ "$2" -ge "$1" ]; }
last_event() { as_vigil vigil log tail --json -n 1 --data /var/lib/vigil 2>/dev/null; }
# stopped_clean: the node's last stop was clean: exited (not killed) with 0, node-stopped last.
stopped_clean() {
  check "a clean stop (exit $(prop ExecMainStatus), $(prop Result))" \
    bash -c '[ "$(systemctl show -P ExecMainCode vigil)" = 1 ] && [ "$(systemctl show -P ExecMainStatus vigil)" = 0 ] && [ "$(systemctl show -P Result vigil)" = success ]'
  check "the last event is node-stopped" last_is_stopped
}
last_is_stopped() { last_event | grep -q '"kind":"node-stopped"'; }
# no_refusals UNIT: nothing in the unit's journal of this boot says its sandbox refused a call.
no_refusals() {
  local refused
  refused=$(journalctl -b --no-pager -o cat -u "$1" | grep -iE 'not permitted|EPERM|SIGSYS|permission denied|apparmor' | head -n 5)
  check "nothing in $1's journal says a call was refused${refused:+: $refused}" [ -z "$refused" ]
}
# exposure UNIT METRIC: systemd-analyze security's overall level for the unit, checked and printed.
exposure() {
  local level
  level=$(systemd-analyze security "$1" --no-pager 2>/dev/null | grep -o "Overall exposure level for $1.service: [0-9.]*" | grep -o '[0-9.]*$')
  if [ -n "$level" ]; then ok "systemd-analyze security $1: $level"; metric "$2" "$level" score; else bad "systemd-analyze security printed no exposure level for $1"; fi
}
active_ready() { [ "$(prop ActiveState)" = active ] && [ "$(prop SubState)" = running ]; }
show_journal() { echo "     --- journalctl -u vigil (last 25 lines):"; journalctl -u vigil -b --no-pager -n 25 | sed 's/^/     | /'; }
verdict() {
  echo "$CHECKS checks, $FAILED failed"
  if [ "$FAILED" -eq 0 ]; then echo "vmtest: phase $PHASE passed"; else echo "vmtest: phase $PHASE failed"; fi
  sync
}
# hold MS: press the button that long.
hold() { press; sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; release; }

echo "vmtest: phase $PHASE, systemd $(systemctl --version | head -n 1 | cut -d' ' -f2), kernel $(uname -r)"
check "the emulated controllers are there (hci0, hci1)" test -e /sys/class/bluetooth/hci1
check "the gpio-sim chip is there" test -e "$GPIO_SIM/sim_gpio1/value"

if [ "$PHASE" = 1 ]; then
  echo "1. install the previous package: a box nobody has set up"
  if dpkg -i "$HERE"/previous/vigil_*.deb > /tmp/dpkg-previous.log 2>&1; then
    ok "dpkg -i $(basename "$HERE"/previous/vigil_*.deb)"
  else
    bad "dpkg -i of the previous package failed:"; sed 's/^/     | /' /tmp/dpkg-previous.log
  fi
  check "the vigil user is in the gpio and bluetooth groups" bash -c 'id -nG vigil | grep -qw gpio && id -nG vigil | grep -qw bluetooth'
  check "the chip belongs to the gpio group (the package's udev rule, reloaded)" bash -c '[ "$(stat -c %G /dev/gpiochip0)" = gpio ]'
  check "vigil.service is enabled" [ "$(systemctl is-enabled vigil)" = enabled ]
  sleep 5
  check "unset, the unit exits 78 and is not retried (status $(prop ExecMainStatus), restarts $(prop NRestarts))" \
    bash -c '[ "$(systemctl show -P ExecMainStatus vigil)" = 78 ] && [ "$(systemctl show -P NRestarts vigil)" = 0 ] && [ "$(systemctl show -P ActiveState vigil)" = failed ]'

  echo "2. vigil setup, then start: READY"
  echo 'correct horse battery staple' > /root/admin-password
  if vigil setup --non-interactive --board vm --radio hci0 --site-name "VM shelter" --site-location 40.4168,-3.7038 \
       --staff "+34 600 111 222" --page 127.0.0.1:8444 --admin-password-file /root/admin-password \
       --notifier /usr/share/vigil/notify/vigil-notify-webhook > /tmp/setup.log 2>&1; then
    ok "vigil setup --non-interactive"
  else
    bad "vigil setup failed:"; sed 's/^/     | /' /tmp/setup.log
  fi
  # The webhook's address (setup asks only for the notifier's path) and its ledger, the node's
  # user's.
  sed -i '/^  command: "\/usr\/share\/vigil\/notify\/vigil-notify-webhook"/a\  arguments: [--url, "http://127.0.0.1:8099/staff", --state, /var/lib/vigil/notify]' /etc/vigil/vigil.yaml
  check "the notifier's arguments are in the file" grep -q 'arguments: \[--url' /etc/vigil/vigil.yaml
  install -d -m 0700 -o vigil -g vigil /var/lib/vigil/notify
  "$HERE/webhook-receiver.py" 8099 /tmp/webhook.jsonl &
  RECEIVER=$!
  if systemctl restart vigil; then ok "systemctl restart vigil returned (Type=notify: after READY=1)"; else bad "systemctl restart vigil failed"; show_journal; fi
  if ! active_ready; then
    bad "vigil.service is not active (running): the rest of this boot would only wait"; show_journal
    verdict; systemctl poweroff; exit 0
  fi
  ok "vigil.service is active (running)"
  ready_us=$(( $(prop ActiveEnterTimestampMonotonic) - $(prop ExecMainStartTimestampMonotonic) ))
  metric systemd_start_to_ready_ms $((ready_us / 1000)) ms
  echo "     status: $(prop StatusText)"
  check "the node logged node-started" has_event node-started

  echo "3. the radio: scanning and advertising on hci0, beside another node on hci1"
  cat > /tmp/b.yaml <<YAML
data: /tmp/b
board: sim
radio:
  adapter: hci1
  scan_window: 1s
simulation:
  advertisers: 0
YAML
  vigil run --config /tmp/b.yaml > /tmp/b.log 2>&1 &
  B=$!
  # 64753 = 0xFCF1, the service data of Vigil's presence advert, among a hit's 16-bit UUIDs.
  presence='"service_?[dD]ata_?[uU]uids16":\[([0-9]+,)*64753[],]'
  b_has() { vigil log tail --json -n 100000 --kind scan-batch --data /tmp/b 2>/dev/null | grep -qE "$presence"; }
  box_has() { events scan-batch | grep -qE "$presence"; }
  if wait_ms 60000 b_has; then ok "the other node hears the box's advert"; else bad "the other node never heard the box"; tail -n 20 /tmp/b.log | sed 's/^/     | /'; fi
  if wait_ms 60000 box_has; then ok "the box hears the other node's advert"; else bad "the box never heard the other node"; show_journal; fi
  kill -TERM "$B"; wait "$B" 2>/dev/null

  echo "4. an SOS press lights red"
  check "red is off" red_is 0
  t0=$(mono_us)
  hold 2500
  if wait_ms 5000 red_is 1; then ok "red lights ($(( ($(mono_us) - t0) / 1000 )) ms after the press began)"; else bad "red is not lit"; show_journal; fi
  check "alert-raised SOS in the log" wait_ms 10000 has_event alert-raised '"kind":"SOS"'
  sos=$(events alert-raised | grep '"kind":"SOS"' | tail -n 1)
  staff_got() { grep -q '+34600111222' /tmp/webhook.jsonl 2>/dev/null; }
  if wait_ms 30000 staff_got; then
    ok "the staff's webhook got the call for help (curl from inside the sandbox): $(head -c 160 /tmp/webhook.jsonl)"
  else
    bad "no call for help reached the staff's webhook"; show_journal
  fi
  check "the log records it delivered (an outbox-attempt with delivered true)" wait_ms 10000 has_event outbox-attempt '"delivered":true'
  kill -TERM "$RECEIVER" 2>/dev/null

  echo "5. the page answers"
  code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 20 https://127.0.0.1:8444/ || true)
  check "https://127.0.0.1:8444/ answers ($code)" bash -c "[[ '$code' =~ ^(200|30[0-9]|401)$ ]]"

  echo "6. SIGSTOP: the watchdog kills the node and systemd restarts it"
  pid=$(prop MainPID); restarts=$(prop NRestarts); before=$(last_event)
  t0=$(mono_us)
  kill -STOP "$pid"
  back() { [ "$(prop NRestarts)" -gt "$restarts" ] && [ "$(prop MainPID)" != "$pid" ] && active_ready; }
  if wait_ms 150000 back; then
    t1=$(prop ActiveEnterTimestampMonotonic)
    ok "restarted and READY again (pid $pid → $(prop MainPID))"
    metric sigstop_to_ready_ms $(( (t1 - t0) / 1000 )) ms
  else
    bad "not restarted within 150 s (state $(prop ActiveState)/$(prop SubState), restarts $(prop NRestarts))"; show_journal
  fi
  check "the journal says the watchdog fired" bash -c 'journalctl -u vigil -b --no-pager | grep -qi "watchdog timeout"'
  seq=$(echo "$before" | grep -o '"seq":[0-9]*' | cut -d: -f2)
  still_there "an event logged before the stop (seq $seq)" "" "$before"
  still_there "the SOS" alert-raised "$sos"
  check "red is lit again (the SOS restored from the log)" wait_ms 20000 red_is 1

  echo "7. systemctl stop is clean"
  systemctl stop vigil
  stopped_clean
  check "the log checks clean" as_vigil vigil log check --data /var/lib/vigil

  echo "8. upgrade to the current package"
  systemctl start vigil
  conf=$(sha256sum < /etc/vigil/vigil.yaml); count=$(event_count); pid=$(prop MainPID)
  if dpkg -i "$HERE"/current/vigil_*.deb > /tmp/dpkg-current.log 2>&1; then
    ok "dpkg -i $(basename "$HERE"/current/vigil_*.deb) (from $(dpkg-deb -f "$HERE"/previous/vigil_*.deb Version))"
  else
    bad "the upgrade failed:"; sed 's/^/     | /' /tmp/dpkg-current.log
  fi
  check "the installed version is the current package's" [ "$(dpkg-query -W -f='${Version}' vigil)" = "$(dpkg-deb -f "$HERE"/current/vigil_*.deb Version)" ]
  check "the configuration is kept" [ "$(sha256sum < /etc/vigil/vigil.yaml)" = "$conf" ]
  check "the node was restarted on the new binary and is READY" bash -c "[ \"\$(systemctl show -P MainPID vigil)\" != '$pid' ] && [ \"\$(systemctl show -P SubState vigil)\" = running ]"
  check "the log is kept ($count events before, $(event_count) now)" kept "$count" "$(event_count)"
  still_there "the SOS" alert-raised "$sos"

  echo "9. vigil-hub as a service beside its own PostgreSQL, and the box joining it"
  if dpkg -i "$HERE"/hub/vigil-hub_*.deb > /tmp/dpkg-hub.log 2>&1; then
    ok "dpkg -i $(basename "$HERE"/hub/vigil-hub_*.deb)"
  else
    bad "dpkg -i of vigil-hub failed:"; sed 's/^/     | /' /tmp/dpkg-hub.log
  fi
  hub_answers() { curl -sk --max-time 5 -o /dev/null https://127.0.0.1:8443/api/v1/hub; }
  if wait_ms 180000 hub_answers; then
    ok "the hub answers on 8443 ($(systemctl show -P SubState vigil-hub), its cluster made by initdb under the unit's sandbox)"
  else
    bad "the hub does not answer"; journalctl -u vigil-hub -b --no-pager -n 25 | sed 's/^/     | /'
  fi
  runuser -u vigil-hub -- vigil-hub enroll vm-box --data /var/lib/vigil-hub 2>/dev/null | tail -n 1 > /root/hub-token
  if vigil setup --non-interactive --hub-url https://127.0.0.1:8443 --hub-token-file /root/hub-token > /tmp/setup-hub.log 2>&1; then
    ok "vigil setup --hub-url joins it"
  else
    bad "vigil setup --hub-url failed:"; sed 's/^/     | /' /tmp/setup-hub.log
  fi
  systemctl restart vigil
  if wait_ms 120000 has_event hub-acknowledged; then
    ok "the hub acknowledged the box's upload (hub-acknowledged in the box's log)"
  else
    bad "no hub-acknowledged in the box's log within 120 s"; show_journal; journalctl -u vigil-hub -b --no-pager -n 15 | sed 's/^/     | /'
  fi
  no_refusals vigil-hub
  exposure vigil-hub systemd_exposure_hub

  echo "10. the regional hazard feed: Debian's Mosquitto with mutual TLS, a pedestrian's PSM"
  C=/etc/mosquitto/certs
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  {
    openssl req -x509 "${ec[@]}" -keyout $C/ca.key -out $C/ca.pem -days 3 -subj "/CN=Vigil VM test CA"
    echo "subjectAltName=IP:127.0.0.1" > $C/san.ext
    for name in server box publisher; do
      openssl req "${ec[@]}" -keyout $C/$name.key -out $C/$name.csr -subj "/CN=vm-$name"
      ext=(); [ $name = server ] && ext=(-extfile $C/san.ext)
      openssl x509 -req -in $C/$name.csr -CA $C/ca.pem -CAkey $C/ca.key -CAcreateserial -out $C/$name.crt -days 3 "${ext[@]}"
    done
  } > /tmp/openssl.log 2>&1
  chown mosquitto $C/server.key
  cat > /etc/mosquitto/conf.d/vigil-vm.conf <<CONF
per_listener_settings false
allow_anonymous false
listener 8883 127.0.0.1
cafile $C/ca.pem
certfile $C/server.crt
keyfile $C/server.key
require_certificate true
use_identity_as_username true
CONF
  check "mosquitto restarted with the TLS listener" systemctl restart mosquitto
  install -d -m 0750 -o vigil -g vigil /var/lib/vigil/feed
  install -m 0644 -o vigil -g vigil $C/ca.pem /var/lib/vigil/feed/ca.pem
  install -m 0644 -o vigil -g vigil $C/box.crt /var/lib/vigil/feed/box.crt
  install -m 0600 -o vigil -g vigil $C/box.key /var/lib/vigil/feed/box.key
  printf 'hazards:\n  feed:\n    brokers: ["vm 127.0.0.1:8883 40.4168,-3.7038"]\n' >> /etc/vigil/vigil.yaml
  systemctl restart vigil
  # A pedestrian's PSM (SAE J2735, Fuzz/corpus/j2735/psm-0), published each second until the box
  # has logged it: the box may still be connecting.
  psm_logged() {
    mosquitto_pub -h 127.0.0.1 -p 8883 --cafile $C/ca.pem --cert $C/publisher.crt --key $C/publisher.key \
      -t vzimp/1/GeoRelevance/vm/0/Public/j2735/PSM/0A1B2C3D -f "$HERE/psm.uper" 2>/dev/null
    sleep 1
    has_event hazard-reported '"id":"0A1B2C3D"'
  }
  if wait_ms 90000 psm_logged; then
    ok "the box logged the pedestrian from the feed: $(events hazard-reported | tail -n 1 | cut -c1-160)"
  else
    bad "no hazard-reported from the feed within 90 s"; show_journal; journalctl -u mosquitto -b --no-pager -n 10 | sed 's/^/     | /'
  fi

  echo "11. what the sandbox refused"
  no_refusals vigil
  kernel=$(journalctl -k -b --no-pager -o cat | grep -E 'audit: type=1326|apparmor="DENIED"|avc: +denied' | head -n 5)
  check "nothing in the kernel's log either${kernel:+: $kernel}" [ -z "$kernel" ]
  exposure vigil systemd_exposure

  event_count > "$HERE/events-before-reboot"
  echo "$sos" > "$HERE/sos"
  echo 2 > "$HERE/phase"
  verdict
  systemctl reboot
  exit 0
fi

echo "1. after the reboot: started by systemd at boot"
if wait_ms 120000 active_ready; then
  ok "vigil.service is active (running)"
  metric boot_to_ready_ms $(( $(prop ActiveEnterTimestampMonotonic) / 1000 )) ms
else
  bad "vigil.service is $(prop ActiveState)/$(prop SubState)"; show_journal
fi
check "the log of the first boot is kept (≥ $(cat "$HERE/events-before-reboot") events)" \
  kept "$(cat "$HERE/events-before-reboot")" "$(event_count)"
still_there "the SOS" alert-raised "$(cat "$HERE/sos")"
check "red is lit (the SOS restored)" wait_ms 20000 red_is 1
systemctl stop vigil
stopped_clean
no_refusals vigil
verdict
systemctl poweroff
