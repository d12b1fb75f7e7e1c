#!/usr/bin/env python3
"""A hostile phone for the VM tests (issue 28), independent of Vigil's code: the kernel's L2CAP
socket on the ATT channel, driven through ctypes (Python 3.11's socket module cannot name the
ATT channel or an address type).

    hostile_phone.py ADAPTER-INDEX BOX-ADDRESS HANDLE COUNT

Before each of COUNT links the controller takes a new static random address (BR/EDR off, so LE
connects from it, as a phone's rotating address does); the phone binds that address, links to
the box, asks for a larger MTU, writes one EchoAlert message (evacuate, fire, medical and sos in
turn) with a Write Request to HANDLE, reads the answer and leaves. One line per link on stdout:
"N ADDRESS CATEGORY written|refused 0xCODE|failed WHY".
"""
import ctypes
import json
import os
import random
import socket
import subprocess
import sys

AF_BLUETOOTH, BTPROTO_L2CAP, ATT_CID = 31, 0, 4
BDADDR_LE_PUBLIC, BDADDR_LE_RANDOM = 1, 2
libc = ctypes.CDLL(None, use_errno=True)


class SockaddrL2(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("psm", ctypes.c_ushort), ("bdaddr", ctypes.c_ubyte * 6),
                ("cid", ctypes.c_ushort), ("bdaddr_type", ctypes.c_ubyte)]


def sockaddr(address, kind):
    octets = [int(x, 16) for x in address.split(":")][::-1]
    return SockaddrL2(AF_BLUETOOTH, 0, (ctypes.c_ubyte * 6)(*octets), ATT_CID, kind)


def call(name, fd, addr):
    if getattr(libc, name)(fd, ctypes.byref(addr), ctypes.sizeof(addr)) != 0:
        raise OSError(ctypes.get_errno(), f"{name}: {os.strerror(ctypes.get_errno())}")


def btmgmt(index, *args):
    subprocess.run(["btmgmt", "--index", str(index), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)


def one_link(index, box, handle, n, category):
    address = "C0:" + ":".join(f"{random.randrange(256):02X}" for _ in range(5))
    btmgmt(index, "power", "off")
    btmgmt(index, "bredr", "off")
    btmgmt(index, "static-addr", address)
    btmgmt(index, "power", "on")
    s = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
    try:
        call("bind", s.fileno(), sockaddr(address, BDADDR_LE_RANDOM))
        # Blocking (the kernel gives up on an LE connection after its own timeout); libc's connect
        # on a socket Python made non-blocking would only say "in progress".
        call("connect", s.fileno(), sockaddr(box, BDADDR_LE_PUBLIC))
        s.settimeout(15)
        s.send(bytes([0x02, 0x00, 0x02]))          # Exchange MTU Request: 512
        while True:
            pdu = s.recv(1024)
            if not pdu:
                return f"{n} {address} {category} closed by the box"
            if pdu[0] == 0x03:                      # Exchange MTU Response
                break
        message = json.dumps({"id": f"flood-{n}-{random.getrandbits(32):08x}", "category": category,
                              "content": f"prank {n}: {category}"}).encode()
        s.send(bytes([0x12, handle & 0xFF, handle >> 8]) + message)
        while True:
            pdu = s.recv(1024)
            if not pdu:
                return f"{n} {address} {category} closed by the box"
            if pdu[0] == 0x13:
                return f"{n} {address} {category} written"
            if pdu[0] == 0x01 and len(pdu) >= 5:
                return f"{n} {address} {category} refused 0x{pdu[4]:02x}"
    except OSError as error:
        return f"{n} {address} {category} failed {error}"
    finally:
        s.close()


def main():
    index, box, handle, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3], 0), int(sys.argv[4])
    categories = ["evacuate", "fire", "medical", "sos"]
    for n in range(1, count + 1):
        print(one_link(index, box, handle, n, categories[n % 4]), flush=True)
    # The controller as the other tests expect it: its public address, BR/EDR on.
    btmgmt(index, "power", "off")
    btmgmt(index, "static-addr", "00:00:00:00:00:00")
    btmgmt(index, "bredr", "on")
    btmgmt(index, "power", "on")


if __name__ == "__main__":
    main()
