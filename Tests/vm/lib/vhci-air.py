#!/usr/bin/env python3
"""Bluetooth LE controllers of our own on /dev/vhci, sharing one air, for VM tests.

Debian 12's BlueZ emulator (btvirt 5.66) aborts when a controller advertises more than 31 bytes
with the extended commands; signed frames (docs/signed-frames.md) are 201 bytes. This is a small
controller that carries extended advertising data of up to 251 bytes as the Core Specification
says (Vol 4 Part E §7.7.65.13: reports of at most 229 bytes of data each, longer data split with
data status "incomplete, more to come"), and legacy advertising of 31 bytes, between the
controllers it makes, and from a control FIFO for frames made by hand.

It is a test instrument, not a model of the radio: no channels, timing, collisions or loss.
Each controller answers what the kernel (unconfigured devices: Reset, Read Local Version, Read
BD_ADDR) and a host on the user channel send; every other command is answered "Unknown HCI
Command" (0x01), as a controller without it would. Devices are registered with the "external
configuration" bit, so the kernel leaves them unconfigured and down: only the user channel
(radio.channel: user) opens them.

    vhci-air.py COUNT CONTROL_FIFO   prints one line "hciA hciB ..." once the devices exist.

Control FIFO lines:  advertise hciN HEX  (an extended, non-connectable advert from
                                         DE:00:00:00:00:01, heard by hciN only),
                     quiet               (that advertiser stops).
"""
import os
import select
import struct
import sys
import time

HCI_COMMAND, HCI_EVENT = 0x01, 0x04
EVT_COMMAND_COMPLETE, EVT_LE_META = 0x0E, 0x3E
SUB_ADVERTISING_REPORT, SUB_EXTENDED_ADVERTISING_REPORT = 0x02, 0x0D
REPORT_DATA_MAX = 229          # data one extended report carries (255 - 2 - 24)
EXTENDED_DATA_MAX = 251        # what one Set Extended Advertising Data command carries
AIR_PERIOD = 0.1               # each enabled advertiser is heard this often
UNKNOWN_COMMAND, INVALID_PARAMETERS, COMMAND_DISALLOWED = 0x01, 0x12, 0x0C


class AdvertisingSet:
    def __init__(self):
        self.properties = 0x0013   # legacy ADV_IND until parameters say otherwise
        self.own_address_type = 0
        self.random_address = None
        self.data = b""
        self.scan_response = b""
        self.enabled = False
        self.pending = b""         # fragments of data being assembled


class Controller:
    def __init__(self, fd, public_address):
        self.fd = fd
        self.index = None
        self.public_address = public_address
        self.reset()

    def reset(self):
        self.random_address = None
        self.scanning = None           # None, "legacy" or "extended"
        self.sets = {}                 # handle -> AdvertisingSet
        self.legacy = AdvertisingSet()
        self.le_event_mask = 0x1F      # the specification's default after a reset
        self.event_mask = 0x00001FFFFFFFFFFF

    def send_event(self, code, parameters):
        os.write(self.fd, bytes([HCI_EVENT, code, len(parameters)]) + parameters)

    def complete(self, opcode, status, returned=b""):
        self.send_event(EVT_COMMAND_COMPLETE, struct.pack("<BHB", 1, opcode, status) + returned)

    def le_event_enabled(self, subevent):
        return bool(self.event_mask & (1 << 61)) and bool(self.le_event_mask & (1 << (subevent - 1)))

    def address_of(self, advertising_set):
        """(type, address) an advertising set sends from."""
        if advertising_set.own_address_type & 0x01:
            address = advertising_set.random_address or self.random_address
            return 1, address or self.public_address
        return 0, self.public_address

    def command(self, opcode, p):
        handlers = {
            0x0C03: self.cmd_reset, 0x0C01: self.cmd_event_mask, 0x2001: self.cmd_le_event_mask,
            0x1001: self.cmd_local_version, 0x1003: self.cmd_local_features, 0x1002: self.cmd_local_commands,
            0x1009: self.cmd_bd_addr, 0x2002: self.cmd_le_buffer_size, 0x2003: self.cmd_le_features,
            0x2005: self.cmd_random_address,
            0x2006: self.cmd_legacy_parameters, 0x2008: self.cmd_legacy_data, 0x2009: self.cmd_legacy_scan_response,
            0x200A: self.cmd_legacy_enable, 0x200B: self.cmd_ok_sized(7), 0x200C: self.cmd_legacy_scan_enable,
            0x2035: self.cmd_set_random_address, 0x2036: self.cmd_extended_parameters,
            0x2037: self.cmd_extended_data, 0x2038: self.cmd_extended_scan_response,
            0x2039: self.cmd_extended_enable, 0x203A: self.cmd_max_data_length, 0x203B: self.cmd_number_of_sets,
            0x203C: self.cmd_remove_set, 0x203D: self.cmd_clear_sets,
            0x2041: self.cmd_extended_scan_parameters, 0x2042: self.cmd_extended_scan_enable,
        }
        handler = handlers.get(opcode)
        if handler is None:
            self.complete(opcode, UNKNOWN_COMMAND)
            return
        try:
            handler(opcode, p)
        except (IndexError, struct.error, ValueError):
            self.complete(opcode, INVALID_PARAMETERS)

    # Controller and baseband, informational
    def cmd_reset(self, opcode, p):
        self.reset()
        self.complete(opcode, 0)

    def cmd_event_mask(self, opcode, p):
        self.event_mask = struct.unpack("<Q", p[:8])[0]
        self.complete(opcode, 0)

    def cmd_le_event_mask(self, opcode, p):
        self.le_event_mask = struct.unpack("<Q", p[:8])[0]
        self.complete(opcode, 0)

    def cmd_local_version(self, opcode, p):
        # HCI 5.0 (9), revision 0, LMP 5.0, manufacturer 0x05F1 (the Linux Foundation), subversion 0.
        self.complete(opcode, 0, struct.pack("<BHBHH", 9, 0, 9, 0x05F1, 0))

    def cmd_local_features(self, opcode, p):
        # LE supported (controller), BR/EDR not supported: byte 4 bits 6 and 5.
        self.complete(opcode, 0, bytes([0, 0, 0, 0, 0x60, 0, 0, 0]))

    def cmd_local_commands(self, opcode, p):
        self.complete(opcode, 0, bytes(64))

    def cmd_bd_addr(self, opcode, p):
        self.complete(opcode, 0, self.public_address.to_bytes(6, "little"))

    def cmd_le_buffer_size(self, opcode, p):
        self.complete(opcode, 0, struct.pack("<HB", 251, 8))

    def cmd_le_features(self, opcode, p):
        # LE Extended Advertising (bit 12), LE 2M PHY (bit 8), LE Data Packet Length Extension (bit 5).
        features = (1 << 12) | (1 << 8) | (1 << 5)
        self.complete(opcode, 0, features.to_bytes(8, "little"))

    def cmd_random_address(self, opcode, p):
        # Refused while legacy advertising or scanning runs (Vol 4 Part E §7.8.4); extended sets
        # have addresses of their own.
        if self.legacy.enabled or self.scanning:
            self.complete(opcode, COMMAND_DISALLOWED)
            return
        self.random_address = int.from_bytes(p[:6], "little")
        self.complete(opcode, 0)

    def cmd_ok_sized(self, length):
        def handler(opcode, p):
            self.complete(opcode, 0 if len(p) >= length else INVALID_PARAMETERS)
        return handler

    # Legacy advertising and scanning (an advertising set of its own)
    def cmd_legacy_parameters(self, opcode, p):
        kind, own = p[4], p[5]
        # ADV_IND, ADV_DIRECT_IND (high duty), ADV_SCAN_IND, ADV_NONCONN_IND, ADV_DIRECT_IND (low duty)
        # as extended advertising properties with the legacy bit (Vol 4 Part E §7.8.53).
        self.legacy.properties = {0: 0x13, 1: 0x1D, 2: 0x12, 3: 0x10, 4: 0x15}.get(kind, 0x10)
        self.legacy.own_address_type = own
        self.complete(opcode, 0)

    def cmd_legacy_data(self, opcode, p):
        self.legacy.data = bytes(p[1:1 + min(p[0], 31)])
        self.complete(opcode, 0)

    def cmd_legacy_scan_response(self, opcode, p):
        self.legacy.scan_response = bytes(p[1:1 + min(p[0], 31)])
        self.complete(opcode, 0)

    def cmd_legacy_enable(self, opcode, p):
        self.legacy.enabled = p[0] == 1
        self.complete(opcode, 0)

    def cmd_legacy_scan_enable(self, opcode, p):
        self.scanning = "legacy" if p[0] == 1 else None
        self.complete(opcode, 0)

    # Extended advertising
    def advertising_set(self, handle):
        if handle > 0xEF:
            raise ValueError("advertising handle")
        return self.sets.setdefault(handle, AdvertisingSet())

    def cmd_set_random_address(self, opcode, p):
        self.advertising_set(p[0]).random_address = int.from_bytes(p[1:7], "little")
        self.complete(opcode, 0)

    def cmd_extended_parameters(self, opcode, p):
        if len(p) < 25:
            raise ValueError("length")
        s = self.advertising_set(p[0])
        if s.enabled:
            self.complete(opcode, COMMAND_DISALLOWED)
            return
        s.properties = struct.unpack("<H", p[1:3])[0]
        s.own_address_type = p[10]
        if s.properties & 0x10 and len(s.data) > 31:
            s.data = b""
        self.complete(opcode, 0, bytes([0]))  # selected TX power 0 dBm

    def extended_data(self, opcode, p, scan_response):
        handle, operation, _, length = p[0], p[1], p[2], p[3]
        data = bytes(p[4:4 + length])
        if len(data) != length:
            raise ValueError("length")
        s = self.advertising_set(handle)
        limit = 31 if s.properties & 0x10 else EXTENDED_DATA_MAX
        if operation == 4:                      # unchanged data
            self.complete(opcode, 0)
            return
        if operation in (1, 3):
            s.pending = b""
        s.pending += data
        if len(s.pending) > limit:
            s.pending = b""
            self.complete(opcode, INVALID_PARAMETERS)
            return
        if operation in (2, 3):
            if scan_response:
                s.scan_response = s.pending
            else:
                s.data = s.pending
            s.pending = b""
        self.complete(opcode, 0)

    def cmd_extended_data(self, opcode, p):
        self.extended_data(opcode, p, scan_response=False)

    def cmd_extended_scan_response(self, opcode, p):
        self.extended_data(opcode, p, scan_response=True)

    def cmd_extended_enable(self, opcode, p):
        enable, count = p[0], p[1]
        if count == 0:
            if enable:
                raise ValueError("enable with no sets")
            for s in self.sets.values():
                s.enabled = False
        else:
            for i in range(count):
                handle = p[2 + 4 * i]
                self.advertising_set(handle).enabled = enable == 1
        self.complete(opcode, 0)

    def cmd_max_data_length(self, opcode, p):
        self.complete(opcode, 0, struct.pack("<H", EXTENDED_DATA_MAX))

    def cmd_number_of_sets(self, opcode, p):
        self.complete(opcode, 0, bytes([4]))

    def cmd_remove_set(self, opcode, p):
        self.sets.pop(p[0], None)
        self.complete(opcode, 0)

    def cmd_clear_sets(self, opcode, p):
        self.sets.clear()
        self.complete(opcode, 0)

    def cmd_extended_scan_parameters(self, opcode, p):
        if len(p) < 3:
            raise ValueError("length")
        self.complete(opcode, 0)

    def cmd_extended_scan_enable(self, opcode, p):
        self.scanning = "extended" if p[0] == 1 else None
        self.complete(opcode, 0)

    # What this controller hears
    def hear(self, address_type, address, properties, data, is_scan_response=False):
        if self.scanning == "extended":
            self.extended_report(address_type, address, properties, data, is_scan_response)
        elif self.scanning == "legacy" and properties & 0x10 and len(data) <= 31:
            # Legacy scanning hears only legacy PDUs: ADV_IND 0, ADV_SCAN_IND 2, ADV_NONCONN_IND 3, SCAN_RSP 4.
            kind = (4 if is_scan_response else 1 if properties & 0x04 else 0 if properties & 0x01
                    else 2 if properties & 0x02 else 3)
            if self.le_event_enabled(SUB_ADVERTISING_REPORT):
                self.send_event(EVT_LE_META, bytes([SUB_ADVERTISING_REPORT, 1, kind, address_type])
                                + address.to_bytes(6, "little") + bytes([len(data)]) + data + bytes([0xC4]))

    def extended_report(self, address_type, address, properties, data, is_scan_response):
        if not self.le_event_enabled(SUB_EXTENDED_ADVERTISING_REPORT):
            return
        event_type = properties & 0x17
        if is_scan_response:
            event_type |= 0x08
        legacy = bool(properties & 0x10)
        chunks = [data[i:i + REPORT_DATA_MAX] for i in range(0, len(data), REPORT_DATA_MAX)] or [b""]
        for n, chunk in enumerate(chunks):
            status = 0 if n == len(chunks) - 1 else 1    # 01: incomplete, more data to come
            report = struct.pack("<H", event_type | status << 5) + bytes([address_type]) + address.to_bytes(6, "little")
            report += bytes([0x01, 0x00 if legacy else 0x01, 0xFF if legacy else 0x00, 0x7F, 0xC4])
            report += struct.pack("<H", 0) + bytes([0x00]) + bytes(6) + bytes([len(chunk)]) + chunk
            self.send_event(EVT_LE_META, bytes([SUB_EXTENDED_ADVERTISING_REPORT, 1]) + report)

    def advertisers(self):
        """(type, address, properties, data, scan response) of each enabled set."""
        sets = list(self.sets.values()) + ([self.legacy] if self.legacy.enabled else [])
        for s in sets:
            if s.enabled:
                address_type, address = self.address_of(s)
                yield address_type, address, s.properties, s.data, s.scan_response


def read_packet(fd):
    """One whole packet from a vhci descriptor (the kernel writes one packet per read)."""
    return os.read(fd, 4096)


def main():
    count, fifo = int(sys.argv[1]), sys.argv[2]
    controllers = []
    for i in range(count):
        fd = os.open("/dev/vhci", os.O_RDWR)
        # Vendor packet 0xFF: create a primary device (bits 0-1) needing external configuration (bit 6).
        os.write(fd, bytes([0xFF, 0x40]))
        controllers.append(Controller(fd, 0x5E_00_00_00_10_00 + i))
    by_fd = {c.fd: c for c in controllers}
    pending = set(by_fd)
    while pending:
        ready, _, _ = select.select(list(pending), [], [], 5)
        if not ready:
            sys.exit("vhci-air: the kernel made no devices")
        for fd in ready:
            packet = read_packet(fd)
            if packet[:1] == b"\xff" and len(packet) >= 4:
                by_fd[fd].index = struct.unpack("<H", packet[2:4])[0]
                pending.discard(fd)
            elif packet[:1] == bytes([HCI_COMMAND]):
                opcode = struct.unpack("<H", packet[1:3])[0]
                by_fd[fd].command(opcode, packet[4:4 + packet[3]])
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    control = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    print(" ".join(f"hci{c.index}" for c in controllers), flush=True)

    injected = None     # (receiver, (address type, address, properties, data)) from the control FIFO
    by_name = {f"hci{c.index}": c for c in controllers}
    buffered = b""
    next_air = time.monotonic()
    while True:
        timeout = max(0.0, next_air - time.monotonic())
        ready, _, _ = select.select(list(by_fd) + [control], [], [], timeout)
        for fd in ready:
            if fd == control:
                buffered += os.read(control, 65536)
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    words = line.decode(errors="replace").split()
                    try:
                        if words[:1] == ["advertise"] and len(words) == 3 and words[1] in by_name:
                            injected = (by_name[words[1]], (1, 0xDE_00_00_00_00_01, 0x0000, bytes.fromhex(words[2])[:EXTENDED_DATA_MAX]))
                        elif words[:1] == ["quiet"]:
                            injected = None
                        else:
                            print(f"vhci-air: cannot read {line[:80]!r}", file=sys.stderr, flush=True)
                    except ValueError:
                        print(f"vhci-air: not hex: {line[:80]!r}", file=sys.stderr, flush=True)
                continue
            try:
                packet = read_packet(fd)
            except OSError:
                sys.exit(0)     # the device was removed
            if packet[:1] == bytes([HCI_COMMAND]) and len(packet) >= 4:
                opcode = struct.unpack("<H", packet[1:3])[0]
                by_fd[fd].command(opcode, packet[4:4 + packet[3]])
        if time.monotonic() >= next_air:
            next_air = time.monotonic() + AIR_PERIOD
            for sender in controllers:
                for address_type, address, properties, data, scan_response in sender.advertisers():
                    for receiver in controllers:
                        if receiver is not sender:
                            receiver.hear(address_type, address, properties, data)
                            if properties & 0x02 and scan_response:   # scannable: an active scan gets the response
                                receiver.hear(address_type, address, properties, scan_response, is_scan_response=True)
            if injected:
                receiver, advert = injected
                receiver.hear(*advert)


if __name__ == "__main__":
    main()
