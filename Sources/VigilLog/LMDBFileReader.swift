import VigilSystem

/// Reads an LMDB data file page by page, without LMDB, with every offset checked.
///
/// Why: LMDB trusts its file. A page mangled by a failing SD card sends it through a wild pointer
/// (SIGSEGV), and a sector the card cannot read is a SIGBUS through the memory map. This reader
/// uses `pread`, so an unreadable sector is an error, and bounds-checks every page number, offset
/// and length, so a mangled page is a finding. It is what `vigil log check` walks and what
/// `vigil log salvage` copies from; it is fuzzed (`vigil-fuzz lmdb-file`).
///
/// The layout read here is LMDB 0.9's on a 64-bit little-endian machine (Debian's liblmdb0 on
/// amd64 and arm64): a 16-byte page header (page number, padding, flags, lower/upper free-space
/// bounds or an overflow page count), node offsets after it, and nodes of `lo, hi, flags, key size`
/// (2 bytes each), the key, then the value or an overflow page number.
public struct LMDBFileReader {

    static let headerSize = 16
    static let nodeHeaderSize = 8
    static let flagBranch: UInt16 = 0x01
    static let flagLeaf: UInt16 = 0x02
    static let flagOverflow: UInt16 = 0x04
    static let flagMeta: UInt16 = 0x08
    static let flagLeaf2: UInt16 = 0x20
    static let nodeBigData: UInt16 = 0x01
    static let metaMagic: UInt32 = 0xBEEF_C0DE
    /// The deepest B-tree walked; LMDB's own limit (CURSOR_STACK) is 32.
    static let maximumDepth = 32
    /// Largest value followed into overflow pages (the log's records are far smaller).
    static let maximumValueBytes = 64 << 20

    /// Where pages come from: a file through `pread`, or bytes in memory (tests, the fuzzer).
    let readPage: (_ number: UInt64, _ count: Int) throws -> [UInt8]
    public let pageSize: Int
    public let pageCount: UInt64

    /// Reads `path`. The page size is taken from the first meta page that has LMDB's magic.
    /// `assumingPageSize` (salvage): used when neither meta page states one, so the pages can
    /// still be scanned for checksummed records.
    public static func open(path: String, assumingPageSize: Int? = nil) throws(LogError) -> LMDBFileReader {
        let file: PositionalFile
        do { file = try PositionalFile(readingAt: path) } catch { throw .system(error) }
        return try make(size: file.size, assumingPageSize: assumingPageSize) { offset, count in
            let bytes = try file.read(count: count, at: offset)
            guard bytes.count == count else { throw LogError.incompatible("short read at byte \(offset): \(bytes.count) of \(count)") }
            return bytes
        }
    }

    /// Reads a data file held in memory.
    public static func inMemory(_ bytes: [UInt8]) throws(LogError) -> LMDBFileReader {
        try make(size: bytes.count) { offset, count in
            guard offset >= 0, count >= 0, offset <= bytes.count, count <= bytes.count - offset else {
                throw LogError.incompatible("read past the end")
            }
            return Array(bytes[offset..<(offset + count)])
        }
    }

    private static func make(size: Int, assumingPageSize: Int? = nil,
                             read: @escaping (_ offset: Int, _ count: Int) throws -> [UInt8]) throws(LogError) -> LMDBFileReader {
        guard size >= 2 * 512 else { throw .incompatible("a data file of \(size) bytes is too small to be LMDB's") }
        // Meta page 0 starts the file; its page size is in the free database's record (md_pad).
        // If page 0 is mangled, meta page 1 sits one page in and says the same.
        // A size is trusted when meta page 1 is found one such page in (its own page number 1): a
        // flipped bit in page 0's stated size must not send every read to the wrong offset.
        let sizes = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
        func isMeta(at offset: Int, number: UInt64) -> Bool {
            guard offset + 512 <= size, let head = try? read(offset, 512) else { return false }
            return head.u32(16) == metaMagic && head.u16(10) & flagMeta != 0 && head.u64(0) == number
        }
        var pageSize = 0
        let stated = (try? read(0, 512)).map { Int($0.u32(40)) } ?? 0
        if sizes.contains(stated) && isMeta(at: stated, number: 1) {
            pageSize = stated
        } else if let found = sizes.first(where: { isMeta(at: $0, number: 1) }) {
            pageSize = found
        } else if isMeta(at: 0, number: 0), sizes.contains(stated) {
            pageSize = stated
        }
        if pageSize == 0, let assumingPageSize, sizes.contains(assumingPageSize) { pageSize = assumingPageSize }
        guard pageSize != 0 else {
            throw .incompatible("neither meta page has LMDB's magic and a page size: this is not an LMDB file any more")
        }
        let pages = UInt64(size / pageSize)
        return LMDBFileReader(readPage: { number, count in
            guard number < pages, count >= 1, UInt64(count) <= pages - number else {
                throw LogError.incompatible("page \(number) is past the end of the file (\(pages) pages)")
            }
            return try read(Int(number) * pageSize, count * pageSize)
        }, pageSize: pageSize, pageCount: pages)
    }

    // MARK: Meta pages

    /// One of the two meta pages: the roots of the free and main databases at a transaction.
    public struct Meta: Sendable, Equatable {
        public var page: UInt64
        public var transaction: UInt64
        public var lastPage: UInt64
        public var mainRoot: UInt64?
        public var mainDepth: Int
        /// The free-page database: which pages the writer may reuse.
        public var freeRoot: UInt64?
        public var freeDepth: Int
    }

    /// Both meta pages, as far as they are readable.
    public func metas() -> [Meta] {
        (0..<UInt64(2)).compactMap { number -> Meta? in
            guard let page = try? readPage(number, 1), page.u32(16) == Self.metaMagic,
                  page.u16(10) & Self.flagMeta != 0 else { return nil }
            let free = 16 + 24 // header, then magic, version, address, map size
            let main = free + 48 // after the free database's record
            let root = page.u64(main + 40), freeRoot = page.u64(free + 40)
            return Meta(page: number, transaction: page.u64(144), lastPage: page.u64(136),
                        mainRoot: root == UInt64.max ? nil : root, mainDepth: Int(page.u16(main + 6)),
                        freeRoot: freeRoot == UInt64.max ? nil : freeRoot, freeDepth: Int(page.u16(free + 6)))
        }
    }

    /// The meta page LMDB uses: the readable one with the higher transaction id.
    public func newestMeta() -> Meta? { metas().max { $0.transaction < $1.transaction } }

    // MARK: Walking a B-tree

    /// How a damage's reason starts when the page could not be read at all (an I/O error: the card's
    /// doing, never a misreading of a file being written).
    public static let unreadable = "unreadable"

    /// What went wrong under a page, with the key range it covered (as far as the parent said).
    public struct Damage: Sendable, Equatable, CustomStringConvertible {
        public var page: UInt64
        public var reason: String
        /// Keys from here (inclusive) are affected; empty means "from the start".
        public var lowKey: [UInt8]
        /// ... up to here (exclusive); nil means "to the end".
        public var highKey: [UInt8]?
        public var description: String { "page \(page): \(reason)" }
    }

    /// A database found in the main database: its name and root.
    public struct NamedDatabase: Sendable, Equatable {
        public var name: String
        public var root: UInt64?
        public var depth: Int
        public var entries: UInt64
    }

    /// Walks the tree under `root` in key order: every leaf entry goes to `entry(key, value)` (the
    /// value already followed into its overflow pages); every page that cannot be read or breaks
    /// LMDB's layout is reported to `damage` with its key range, and the walk goes on beside it.
    /// A page met twice (a cycle a mangled page can make) is damage, not a loop.
    /// `entry` also gets the key range its leaf page covers, as the parents say (`low` empty: from
    /// the start; `high` nil: to the end), so a caller can tell which keys a damaged leaf held.
    public func walk(root: UInt64, depth: Int, lastPage: UInt64,
                     entry: (_ key: [UInt8], _ value: [UInt8], _ low: [UInt8], _ high: [UInt8]?) throws -> Void,
                     damage: (Damage) -> Void,
                     page visitedLeaf: ((_ number: UInt64, _ keys: [[UInt8]]) -> Void)? = nil,
                     integerKeys: Bool = false) rethrows {
        // LMDB orders keys as bytes, except in MDB_INTEGERKEY databases (the free-page list: its
        // keys are transaction ids in native byte order), where 256 comes after 255.
        func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            if integerKeys, a.count == 8, b.count == 8 { return a.u64(0) < b.u64(0) }
            return a.lexicographicallyPrecedes(b)
        }
        func inside(_ key: [UInt8], low: [UInt8], high: [UInt8]?) -> Bool {
            (low.isEmpty || !precedes(key, low)) && (high.map { precedes(key, $0) } ?? true)
        }
        var visited = Set<UInt64>()
        // (page, level from the top, low key, high key): a stack, children pushed in reverse.
        var stack: [(UInt64, Int, [UInt8], [UInt8]?)] = [(root, 1, [], nil)]
        while let (number, level, low, high) = stack.popLast() {
            func fail(_ reason: String) { damage(Damage(page: number, reason: reason, lowKey: low, highKey: high)) }
            guard number >= 2, number <= lastPage, number < pageCount else {
                fail("page number \(number) is outside the file's pages 2...\(min(lastPage, pageCount &- 1))"); continue
            }
            guard visited.insert(number).inserted else { fail("page \(number) is reached twice"); continue }
            guard level <= Self.maximumDepth else { fail("the tree is deeper than \(Self.maximumDepth)"); continue }
            let page: [UInt8]
            do { page = try readPage(number, 1) } catch { fail("\(Self.unreadable): \(error)"); continue }
            let nodes: [Node]
            do { nodes = try Self.nodes(of: page, number: number, pageSize: pageSize) } catch { fail("\(error)"); continue }
            let flags = page.u16(10)
            if flags & Self.flagBranch != 0 {
                guard level < depth else { fail("a branch page at the tree's leaf level \(depth)"); continue }
                // Separator keys ascend and stay inside what the parent gave this page; otherwise
                // the ranges handed to the children (and reported if they are damaged) are wrong.
                let separators = nodes.dropFirst().map(\.key)
                guard zip(separators, separators.dropFirst()).allSatisfy({ precedes($0, $1) }),
                      separators.allSatisfy({ inside($0, low: low, high: high) }) else {
                    fail("separator keys out of order"); continue
                }
                var children: [(UInt64, Int, [UInt8], [UInt8]?)] = []
                for (i, node) in nodes.enumerated() {
                    let childLow = i == 0 ? low : node.key
                    let childHigh = i + 1 < nodes.count ? nodes[i + 1].key : high
                    children.append((node.child, level + 1, childLow, childHigh))
                }
                stack.append(contentsOf: children.reversed())
            } else {
                guard level == depth else { fail("a leaf page at level \(level) of a tree of depth \(depth)"); continue }
                visitedLeaf?(number, nodes.map(\.key))
                var previous: [UInt8]?
                for node in nodes {
                    if let previous, !precedes(previous, node.key) {
                        fail("keys out of order"); break
                    }
                    guard inside(node.key, low: low, high: high) else { fail("a key outside the page's range"); break }
                    previous = node.key
                    let value: [UInt8]
                    if node.flags & Self.nodeBigData != 0 {
                        do { value = try overflowValue(page: node.child, size: node.size, lastPage: lastPage) } catch {
                            damage(Damage(page: node.child, reason: "overflow value: \(error)", lowKey: node.key,
                                          highKey: Self.successor(of: node.key))); continue
                        }
                    } else {
                        value = node.value
                    }
                    try entry(node.key, value, low, high)
                }
            }
        }
    }

    /// The least key after `key` (as LMDB orders keys: bytes, then length).
    static func successor(of key: [UInt8]) -> [UInt8] {
        var next = key
        for i in next.indices.reversed() {
            if next[i] < 0xFF { next[i] += 1; return next }
            next[i] = 0
        }
        return key + [0]
    }

    /// The databases named in the main database (`events`, `checkpoints`, `meta` in a Vigil log).
    public func namedDatabases(_ meta: Meta, damage: (Damage) -> Void) -> [NamedDatabase] {
        guard let root = meta.mainRoot else { return [] }
        var found: [NamedDatabase] = []
        walk(root: root, depth: meta.mainDepth, lastPage: meta.lastPage, entry: { key, value, _, _ in
            guard value.count >= 48 else { return }
            let rootPage = value.u64(40)
            found.append(NamedDatabase(name: String(decoding: key, as: UTF8.self), root: rootPage == UInt64.max ? nil : rootPage,
                                       depth: Int(value.u16(6)), entries: value.u64(32)))
        }, damage: damage)
        return found
    }

    /// The entries of one leaf page found anywhere in the file (salvage reads every page this way,
    /// including pages no tree reaches any more). Nil when the page is not a readable leaf.
    public func leafEntries(page number: UInt64, lastPage: UInt64) -> [(key: [UInt8], value: [UInt8])]? {
        guard let page = try? readPage(number, 1), page.u16(10) & (Self.flagLeaf | Self.flagBranch | Self.flagOverflow | Self.flagMeta | Self.flagLeaf2) == Self.flagLeaf,
              let nodes = try? Self.nodes(of: page, number: number, pageSize: pageSize, lenient: true) else { return nil }
        return nodes.compactMap { node in
            if node.flags & Self.nodeBigData != 0 {
                guard let value = try? overflowValue(page: node.child, size: node.size, lastPage: lastPage) else { return nil }
                return (node.key, value)
            }
            return (node.key, node.value)
        }
    }

    private func overflowValue(page number: UInt64, size: Int, lastPage: UInt64) throws(LogError) -> [UInt8] {
        guard size <= Self.maximumValueBytes else { throw .incompatible("a value of \(size) bytes") }
        guard number >= 2, number <= lastPage else { throw .incompatible("overflow page \(number) is outside the file") }
        let pages = (Self.headerSize + size + pageSize - 1) / pageSize
        let bytes: [UInt8]
        do { bytes = try readPage(number, pages) } catch { throw LogError(wrapping: error) }
        guard bytes.u16(10) & Self.flagOverflow != 0 else { throw .incompatible("page \(number) is not an overflow page") }
        guard Int(bytes.u32(12)) >= pages else { throw .incompatible("overflow page \(number) spans \(bytes.u32(12)) pages, not \(pages)") }
        return Array(bytes[Self.headerSize..<(Self.headerSize + size)])
    }

    // MARK: Nodes

    struct Node {
        var key: [UInt8]
        var flags: UInt16
        /// Leaf: the value's size. Branch: unused.
        var size: Int
        /// Branch: the child page. Leaf with big data: the first overflow page.
        var child: UInt64
        var value: [UInt8]
    }

    /// The nodes of a branch or leaf page, every offset and length checked against the page.
    /// `lenient` (salvage): a node whose offset or lengths are wrong is skipped, not the page.
    static func nodes(of page: [UInt8], number: UInt64, pageSize: Int, lenient: Bool = false) throws(LogError) -> [Node] {
        guard page.count == pageSize, pageSize >= headerSize else { throw .incompatible("a page of \(page.count) bytes") }
        let stored = page.u64(0)
        guard stored == number else { throw .incompatible("the page says it is page \(stored)") }
        let flags = page.u16(10)
        let isBranch = flags & flagBranch != 0
        guard isBranch != (flags & flagLeaf != 0), flags & (flagOverflow | flagMeta | flagLeaf2) == 0 else {
            throw .incompatible("flags \(flags) are neither a branch nor a plain leaf")
        }
        let lower = Int(page.u16(12)), upper = Int(page.u16(14))
        guard lower >= headerSize, lower <= upper, upper <= pageSize, (lower - headerSize) % 2 == 0 else {
            throw .incompatible("free-space bounds \(lower)...\(upper)")
        }
        let count = (lower - headerSize) / 2
        guard count > 0 || !isBranch else { throw .incompatible("an empty branch page") }
        var nodes: [Node] = []
        nodes.reserveCapacity(count)
        for i in 0..<count {
            do throws(LogError) {
                if let node = try node(i, of: page, upper: upper, pageSize: pageSize, isBranch: isBranch) { nodes.append(node) }
            } catch {
                if !lenient { throw error }
            }
        }
        // LMDB packs nodes from `upper` to the end of the page without gaps, each of an even size:
        // nodes not filling that space exactly means a count or an offset was mangled (a shortened
        // count would otherwise drop records without a trace).
        if !lenient {
            let used = nodes.reduce(0) { total, node in
                let size = nodeHeaderSize + node.key.count + (isBranch ? 0 : (node.flags & nodeBigData != 0 ? 8 : node.size))
                return total + (size + 1) & ~1
            }
            guard used == pageSize - upper else {
                throw .incompatible("its \(nodes.count) nodes fill \(used) bytes of the \(pageSize - upper) in use")
            }
        }
        return nodes
    }

    private static func node(_ i: Int, of page: [UInt8], upper: Int, pageSize: Int, isBranch: Bool) throws(LogError) -> Node? {
        do {
            let offset = Int(page.u16(headerSize + 2 * i))
            guard offset >= upper, offset + nodeHeaderSize <= pageSize else {
                throw .incompatible("node \(i) at offset \(offset), outside \(upper)..<\(pageSize)")
            }
            let lo = UInt64(page.u16(offset)), hi = UInt64(page.u16(offset + 2))
            let nodeFlags = page.u16(offset + 4)
            let keySize = Int(page.u16(offset + 6))
            let keyStart = offset + nodeHeaderSize
            guard keyStart + keySize <= pageSize else { throw .incompatible("node \(i)'s key of \(keySize) bytes runs off the page") }
            let key = Array(page[keyStart..<(keyStart + keySize)])
            if isBranch {
                let child = lo | hi << 16 | UInt64(nodeFlags) << 32
                return Node(key: key, flags: 0, size: 0, child: child, value: [])
            }
            let size = Int(lo | hi << 16)
            let valueStart = keyStart + keySize
            if nodeFlags & nodeBigData != 0 {
                guard valueStart + 8 <= pageSize else { throw .incompatible("node \(i)'s overflow page number runs off the page") }
                return Node(key: key, flags: nodeFlags, size: size, child: page.u64(valueStart), value: [])
            }
            guard valueStart + size <= pageSize else { throw .incompatible("node \(i)'s value of \(size) bytes runs off the page") }
            return Node(key: key, flags: nodeFlags, size: size, child: 0, value: Array(page[valueStart..<(valueStart + size)]))
        }
    }
}

extension Array where Element == UInt8 {
    /// Little-endian reads inside the array; 0 past its end (callers check lengths first).
    func u16(_ at: Int) -> UInt16 {
        guard at >= 0, at + 2 <= count else { return 0 }
        return UInt16(self[at]) | UInt16(self[at + 1]) << 8
    }
    func u32(_ at: Int) -> UInt32 {
        guard at >= 0, at + 4 <= count else { return 0 }
        return UInt32(u16(at)) | UInt32(u16(at + 2)) << 16
    }
    func u64(_ at: Int) -> UInt64 {
        guard at >= 0, at + 8 <= count else { return 0 }
        return UInt64(u32(at)) | UInt64(u32(at + 4)) << 32
    }
}
