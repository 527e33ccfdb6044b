// Operators of the paper's unit-cost table (Appendix "Energy Model and Unit Costs"), one module each.
//
// Every operator registers its inputs (`<port>_r`) and its result, so one operation happens per
// clock and the power OpenSTA reports, times the clock period, is the energy of one operation
// including its share of register and clock-pin power. No reset: the registers start at zero (the
// `initial` blocks, outside synthesis), which is also how the activity model in operators.py starts
// them.
//
// The logic between the registers is a separate `<operator>_core` module whose ports are named
// after the registers it reads (`<port>_r`, and `acc` for an accumulator) and the next value it
// computes (`<result>_d`): synthesized alone, its inputs can carry the toggle statistics measured
// on every register (the cross-check in synth_scripts/run.py).
//
// Widths are parameters; synth_scripts/operators.py sets them and says why.

// ACC: accumulate a B-bit operand into a W-bit two's complement accumulator (E_ACC1/2/4).
// B = 1 is a 1-bit weight: bit 1 means +1 and bit 0 means -1 (rate-coded linear layers).
module mh_acc_core #(parameter B = 4, parameter W = 18) (
    input  wire [B-1:0] x_r,
    input  wire [W-1:0] acc,
    output wire [W-1:0] acc_d
);
    generate
        if (B == 1) begin : g_pm1
            assign acc_d = x_r[0] ? acc + 1'b1 : acc - 1'b1;
        end else begin : g_signed
            assign acc_d = acc + {{(W-B){x_r[B-1]}}, x_r};
        end
    endgenerate
endmodule

module mh_acc #(parameter B = 4, parameter W = 18) (
    input  wire         clk,
    input  wire [B-1:0] x,
    output reg  [W-1:0] acc
);
    reg [B-1:0] x_r;
    wire [W-1:0] acc_d;
    mh_acc_core #(.B(B), .W(W)) core (.x_r(x_r), .acc(acc), .acc_d(acc_d));
`ifndef SYNTHESIS
    initial begin
        x_r = 0;
        acc = 0;
    end
`endif
    always @(posedge clk) begin
        x_r <= x;
        acc <= acc_d;
    end
endmodule

// INT4 MAC with a 1-bit weight (E_MAC4): acc += w ? a : -a, a a signed A-bit code.
module mh_mac1_core #(parameter A = 4, parameter W = 18) (
    input  wire         w_r,
    input  wire [A-1:0] a_r,
    input  wire [W-1:0] acc,
    output wire [W-1:0] acc_d
);
    wire [W-1:0] a_ext = {{(W-A){a_r[A-1]}}, a_r};
    assign acc_d = w_r ? acc + a_ext : acc - a_ext;
endmodule

module mh_mac1 #(parameter A = 4, parameter W = 18) (
    input  wire         clk,
    input  wire         w,
    input  wire [A-1:0] a,
    output reg  [W-1:0] acc
);
    reg w_r;
    reg [A-1:0] a_r;
    wire [W-1:0] acc_d;
    mh_mac1_core #(.A(A), .W(W)) core (.w_r(w_r), .a_r(a_r), .acc(acc), .acc_d(acc_d));
`ifndef SYNTHESIS
    initial begin
        w_r = 0;
        a_r = 0;
        acc = 0;
    end
`endif
    always @(posedge clk) begin
        w_r <= w;
        a_r <= a;
        acc <= acc_d;
    end
endmodule

// Signed A-bit x signed B-bit MAC (E_MAC4x4, the QNN attention path): acc += a * b.
module mh_mac_core #(parameter A = 4, parameter B = 4, parameter W = 16) (
    input  wire [A-1:0] a_r,
    input  wire [B-1:0] b_r,
    input  wire [W-1:0] acc,
    output wire [W-1:0] acc_d
);
    wire signed [A+B-1:0] p = $signed(a_r) * $signed(b_r);
    assign acc_d = acc + {{(W-A-B){p[A+B-1]}}, p};
endmodule

module mh_mac #(parameter A = 4, parameter B = 4, parameter W = 16) (
    input  wire         clk,
    input  wire [A-1:0] a,
    input  wire [B-1:0] b,
    output reg  [W-1:0] acc
);
    reg [A-1:0] a_r;
    reg [B-1:0] b_r;
    wire [W-1:0] acc_d;
    mh_mac_core #(.A(A), .B(B), .W(W)) core (.a_r(a_r), .b_r(b_r), .acc(acc), .acc_d(acc_d));
`ifndef SYNTHESIS
    initial begin
        a_r = 0;
        b_r = 0;
        acc = 0;
    end
`endif
    always @(posedge clk) begin
        a_r <= a;
        b_r <= b;
        acc <= acc_d;
    end
endmodule

// Threshold comparison (E_CMP): fire = v >= theta, both signed W-bit.
module mh_cmp_core #(parameter W = 18) (
    input  wire [W-1:0] v_r,
    input  wire [W-1:0] theta_r,
    output wire         fire_d
);
    assign fire_d = $signed(v_r) >= $signed(theta_r);
endmodule

module mh_cmp #(parameter W = 18) (
    input  wire         clk,
    input  wire [W-1:0] v,
    input  wire [W-1:0] theta,
    output reg          fire
);
    reg [W-1:0] v_r;
    reg [W-1:0] theta_r;
    wire fire_d;
    mh_cmp_core #(.W(W)) core (.v_r(v_r), .theta_r(theta_r), .fire_d(fire_d));
`ifndef SYNTHESIS
    initial begin
        v_r = 0;
        theta_r = 0;
        fire = 0;
    end
`endif
    always @(posedge clk) begin
        v_r <= v;
        theta_r <= theta;
        fire <= fire_d;
    end
endmodule

// Membrane subtraction (E_SUB): y = v - theta, signed W-bit, wrapping.
module mh_sub_core #(parameter W = 18) (
    input  wire [W-1:0] v_r,
    input  wire [W-1:0] theta_r,
    output wire [W-1:0] y_d
);
    assign y_d = v_r - theta_r;
endmodule

module mh_sub #(parameter W = 18) (
    input  wire         clk,
    input  wire [W-1:0] v,
    input  wire [W-1:0] theta,
    output reg  [W-1:0] y
);
    reg [W-1:0] v_r;
    reg [W-1:0] theta_r;
    wire [W-1:0] y_d;
    mh_sub_core #(.W(W)) core (.v_r(v_r), .theta_r(theta_r), .y_d(y_d));
`ifndef SYNTHESIS
    initial begin
        v_r = 0;
        theta_r = 0;
        y = 0;
    end
`endif
    always @(posedge clk) begin
        v_r <= v;
        theta_r <= theta;
        y <= y_d;
    end
endmodule

// INT4 clamp (E_clamp4): y = clip(x, -2**(N-1), 2**(N-1)-1) of a signed W-bit level.
module mh_clamp_core #(parameter W = 18, parameter N = 4) (
    input  wire [W-1:0] x_r,
    output wire [N-1:0] y_d
);
    localparam signed [W-1:0] HI = (1 << (N - 1)) - 1;
    localparam signed [W-1:0] LO = -(1 << (N - 1));
    assign y_d = $signed(x_r) > HI ? HI[N-1:0] : $signed(x_r) < LO ? LO[N-1:0] : x_r[N-1:0];
endmodule

module mh_clamp #(parameter W = 18, parameter N = 4) (
    input  wire         clk,
    input  wire [W-1:0] x,
    output reg  [N-1:0] y
);
    reg [W-1:0] x_r;
    wire [N-1:0] y_d;
    mh_clamp_core #(.W(W), .N(N)) core (.x_r(x_r), .y_d(y_d));
`ifndef SYNTHESIS
    initial begin
        x_r = 0;
        y = 0;
    end
`endif
    always @(posedge clk) begin
        x_r <= x;
        y <= y_d;
    end
endmodule

// M-TTFS encoder (E_enc): code q (N bits, two's complement when C < 2**N - 1) to event time
// tau = C - q and valid = |tau - IMAX| > K (the temporal mask with dead zone Omega_K).
module mh_enc_core #(parameter N = 4, parameter C = 7, parameter IMAX = 7, parameter K = 1) (
    input  wire [N-1:0] q_r,
    output wire [N-1:0] tau_d,
    output wire         valid_d
);
    assign tau_d = C[N-1:0] - q_r;
    // |tau - IMAX| > K, as two unsigned comparisons on N+1 bits
    wire above = {1'b0, tau_d} > IMAX + K;
    wire below = {1'b0, tau_d} + K < IMAX;
    assign valid_d = above | below;
endmodule

module mh_enc #(parameter N = 4, parameter C = 7, parameter IMAX = 7, parameter K = 1) (
    input  wire         clk,
    input  wire [N-1:0] q,
    output reg  [N-1:0] tau,
    output reg          valid
);
    reg [N-1:0] q_r;
    wire [N-1:0] tau_d;
    wire valid_d;
    mh_enc_core #(.N(N), .C(C), .IMAX(IMAX), .K(K)) core (
        .q_r(q_r), .tau_d(tau_d), .valid_d(valid_d)
    );
`ifndef SYNTHESIS
    initial begin
        q_r = 0;
        tau = 0;
        valid = 0;
    end
`endif
    always @(posedge clk) begin
        q_r <= q;
        tau <= tau_d;
        valid <= valid_d;
    end
endmodule
