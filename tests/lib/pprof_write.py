"""pprof profiles written by hand, field by field (profile.proto), so that
tests can make the ones no profiler would: broken, hostile or huge.

    profile(functions=["main", "work"], samples=[([1, 0], 10)])

functions are named by string (optionally (name, file) pairs); each has a
location of the same number + 1 with one line. A sample is (stack, value)
with its stack leaf first, as indexes into functions; or, with
raw_locations=True, location ids as they stand; or bytes, the packed field
of location ids as it stands (b"\\x01" * 50_000_000: location 1 fifty
million times, written at once). Every field that a test may want to break
is a keyword: location_lines={i: n} gives function i's location n lines
(all of that function), extra_strings=n adds n empty strings to the table.
"""
import gzip


def _varint(n):
    n &= (1 << 64) - 1  # negative int64s as two's complement, as protobuf does
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _int(field, n):
    return _key(field, 0) + _varint(n)


def _bytes(field, data):
    return _key(field, 2) + _varint(len(data)) + data


def _packed(field, numbers):
    return _bytes(field, b"".join(_varint(n) for n in numbers))


def profile(functions, samples, sample_type=("cpu", "nanoseconds"), period_type=None,
            period=None, raw_locations=False, gzipped=False, location_lines=None,
            extra_strings=0):
    """sample_type: a (type, unit) pair, or a list of them, one per value
    of each sample."""
    strings = [""]

    def s(text):
        if text not in strings:
            strings.append(text)
        return strings.index(text)

    out = bytearray()
    types = sample_type if isinstance(sample_type, list) else [sample_type]
    for type_, unit in types:
        out += _bytes(1, _int(1, s(type_)) + _int(2, s(unit)))
    for stack, value in samples:
        values = value if isinstance(value, (list, tuple)) else [value]
        if isinstance(stack, bytes):
            locations = _bytes(1, stack)
        else:
            locations = _packed(1, stack if raw_locations else [i + 1 for i in stack])
        out += _bytes(2, locations + _packed(2, values))
    for i, fn in enumerate(functions):
        name, file = fn if isinstance(fn, tuple) else (fn, None)
        line = _bytes(4, _int(1, i + 1) + _int(2, 10 + i))
        out += _bytes(4, _int(1, i + 1) + line * (location_lines or {}).get(i, 1))
        f = _int(1, i + 1) + _int(2, s(name)) + _int(3, s(name))
        if file:
            f += _int(4, s(file))
        out += _bytes(5, f)
    for text in strings:
        out += _bytes(6, text.encode("utf-8", "surrogateescape"))
    out += _bytes(6, b"") * extra_strings
    if period_type:
        out += _bytes(11, _int(1, s(period_type[0])) + _int(2, s(period_type[1])))
        # the strings were written already: a period type must use known ones
        assert all(t in strings for t in period_type)
    if period is not None:
        out += _int(12, period)
    data = bytes(out)
    return gzip.compress(data) if gzipped else data
