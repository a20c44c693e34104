"""The numbers of the SPIR-V specification that qdarray's writer and renderer use: opcodes,
capabilities, decorations, storage classes, built-ins, scopes and memory semantics, and the
GLSL.std.450 extended instructions. Values are the specification's (SPIR-V 1.6 unified,
GLSL.std.450 version 1.00 revision 4); tests/vulkan/test_spirv_module.py disassembles modules
with `spirv-dis` and checks the names it prints."""

from __future__ import annotations

from enum import IntEnum


class Op(IntEnum):
    Nop = 0
    Undef = 1
    Name = 5
    MemberName = 6
    Extension = 10
    ExtInstImport = 11
    ExtInst = 12
    MemoryModel = 14
    EntryPoint = 15
    ExecutionMode = 16
    Capability = 17
    TypeVoid = 19
    TypeBool = 20
    TypeInt = 21
    TypeFloat = 22
    TypeVector = 23
    TypeArray = 28
    TypeRuntimeArray = 29
    TypeStruct = 30
    TypePointer = 32
    TypeFunction = 33
    ConstantTrue = 41
    ConstantFalse = 42
    Constant = 43
    ConstantComposite = 44
    ConstantNull = 46
    Function = 54
    FunctionParameter = 55
    FunctionEnd = 56
    FunctionCall = 57
    Variable = 59
    Load = 61
    Store = 62
    AccessChain = 65
    PtrAccessChain = 67
    ArrayLength = 68
    Decorate = 71
    MemberDecorate = 72
    CompositeConstruct = 80
    CompositeExtract = 81
    ConvertFToU = 109
    ConvertFToS = 110
    ConvertSToF = 111
    ConvertUToF = 112
    UConvert = 113
    SConvert = 114
    FConvert = 115
    ConvertPtrToU = 117
    ConvertUToPtr = 120
    Bitcast = 124
    SNegate = 126
    FNegate = 127
    IAdd = 128
    FAdd = 129
    ISub = 130
    FSub = 131
    IMul = 132
    FMul = 133
    UDiv = 134
    SDiv = 135
    FDiv = 136
    UMod = 137
    SRem = 138
    SMod = 139
    FRem = 140
    FMod = 141
    IsNan = 156
    IsInf = 157
    LogicalEqual = 164
    LogicalNotEqual = 165
    LogicalOr = 166
    LogicalAnd = 167
    LogicalNot = 168
    Select = 169
    IEqual = 170
    INotEqual = 171
    UGreaterThan = 172
    SGreaterThan = 173
    UGreaterThanEqual = 174
    SGreaterThanEqual = 175
    ULessThan = 176
    SLessThan = 177
    ULessThanEqual = 178
    SLessThanEqual = 179
    FOrdEqual = 180
    FUnordEqual = 181
    FOrdNotEqual = 182
    FUnordNotEqual = 183
    FOrdLessThan = 184
    FUnordLessThan = 185
    FOrdGreaterThan = 186
    FUnordGreaterThan = 187
    FOrdLessThanEqual = 188
    FUnordLessThanEqual = 189
    FOrdGreaterThanEqual = 190
    FUnordGreaterThanEqual = 191
    ShiftRightLogical = 194
    ShiftRightArithmetic = 195
    ShiftLeftLogical = 196
    BitwiseOr = 197
    BitwiseXor = 198
    BitwiseAnd = 199
    Not = 200
    BitCount = 205
    ControlBarrier = 224
    MemoryBarrier = 225
    AtomicLoad = 227
    AtomicStore = 228
    AtomicExchange = 229
    AtomicCompareExchange = 230
    AtomicIIncrement = 232
    AtomicIDecrement = 233
    AtomicIAdd = 234
    AtomicISub = 235
    AtomicSMin = 236
    AtomicUMin = 237
    AtomicSMax = 238
    AtomicUMax = 239
    AtomicAnd = 240
    AtomicOr = 241
    AtomicXor = 242
    Phi = 245
    LoopMerge = 246
    SelectionMerge = 247
    Label = 248
    Branch = 249
    BranchConditional = 250
    Switch = 251
    Return = 253
    ReturnValue = 254
    Unreachable = 255
    AtomicFMinEXT = 5614
    AtomicFMaxEXT = 5615
    AtomicFAddEXT = 6035


class Cap(IntEnum):
    Shader = 1
    Float16 = 9
    Float64 = 10
    Int64 = 11
    Int64Atomics = 12
    Int16 = 22
    Int8 = 39
    GroupNonUniform = 61
    StorageBuffer16BitAccess = 4433
    StorageBuffer8BitAccess = 4448
    PhysicalStorageBufferAddresses = 5347
    AtomicFloat32MinMaxEXT = 5612
    AtomicFloat64MinMaxEXT = 5613
    AtomicFloat32AddEXT = 6033
    AtomicFloat64AddEXT = 6034


class Dec(IntEnum):
    Block = 2
    ArrayStride = 6
    BuiltIn = 11
    Restrict = 19
    Aliased = 20
    Coherent = 23
    NonWritable = 24
    NonReadable = 25
    Binding = 33
    DescriptorSet = 34
    Offset = 35
    NoContraction = 42


class SC(IntEnum):
    """Storage classes."""

    UniformConstant = 0
    Input = 1
    Uniform = 2
    Workgroup = 4
    Private = 6
    Function = 7
    PushConstant = 9
    StorageBuffer = 12
    PhysicalStorageBuffer = 5349


class BuiltIn(IntEnum):
    NumWorkgroups = 24
    WorkgroupSize = 25
    WorkgroupId = 26
    LocalInvocationId = 27
    GlobalInvocationId = 28
    LocalInvocationIndex = 29


class Scope(IntEnum):
    CrossDevice = 0
    Device = 1
    Workgroup = 2
    Subgroup = 3
    Invocation = 4


class Sem(IntEnum):
    """Memory semantics bits."""

    Relaxed = 0
    Acquire = 0x2
    Release = 0x4
    AcquireRelease = 0x8
    UniformMemory = 0x40
    WorkgroupMemory = 0x100


class GLSL(IntEnum):
    """GLSL.std.450 extended instructions."""

    Round = 1
    RoundEven = 2
    Trunc = 3
    FAbs = 4
    SAbs = 5
    FSign = 6
    SSign = 7
    Floor = 8
    Ceil = 9
    Fract = 10
    Sin = 13
    Cos = 14
    Tan = 15
    Asin = 16
    Acos = 17
    Atan = 18
    Sinh = 19
    Cosh = 20
    Tanh = 21
    Asinh = 22
    Acosh = 23
    Atanh = 24
    Atan2 = 25
    Pow = 26
    Exp = 27
    Log = 28
    Exp2 = 29
    Log2 = 30
    Sqrt = 31
    InverseSqrt = 32
    FMin = 37
    UMin = 38
    SMin = 39
    FMax = 40
    UMax = 41
    SMax = 42
    FClamp = 43
    FMix = 46
    Fma = 50
    Frexp = 51
    Ldexp = 53
    NMin = 79
    NMax = 80
