"""The list-scheduling model behind v8 (session 16): how much causal work the busiest SM gets.

Each tile of kBlockM query rows costs its number of key tiles plus a fixed 2 (prologue and
epilogue), in key-tile units, on 132 SMs. Orders: v7's (L2 groups of heads, the longest causal row
blocks first inside a group) and v6's (the row blocks of one head next to each other). Schedules:
static (block k takes tiles k, k + 132, ...), snake (every other round reversed), dynamic (each
tile, in order, to the SM that frees first), LPT (longest first overall, dynamic). Prints makespan
over ideal (total work / 132). Run: python3 schedule_model.py
"""
import heapq
G=132
def tiles_v7(bh,mb,seq,BM,BN,group,causal,order="group"):
    out=[]
    ng=(bh+group-1)//group
    for g in range(ng):
        size=min(group,bh-g*group)
        for r in range(size*mb):
            m=r//size; mm=mb-1-m
            n_end=min(seq,mm*BM+BM) if causal else seq
            out.append((n_end+BN-1)//BN)
    return out
def tiles_v6(bh,mb,seq,BM,BN,causal):
    out=[]
    for h in range(bh):
        for m in range(mb):
            mm=mb-1-m
            n_end=min(seq,mm*BM+BM) if causal else seq
            out.append((n_end+BN-1)//BN)
    return out
def static(t,c): 
    load=[0]*G
    for i,x in enumerate(t): load[i%G]+=x+c
    return max(load)
def snake(t,c):
    load=[0]*G
    for i,x in enumerate(t):
        r,k=divmod(i,G); load[k if r%2==0 else G-1-k]+=x+c
    return max(load)
def dynamic(t,c):
    h=[(0,k) for k in range(G)]
    for x in t:
        l,k=heapq.heappop(h); heapq.heappush(h,(l+x+c,k))
    return max(l for l,k in h)
def lpt(t,c): return dynamic(sorted(t,reverse=True),c)
cases=[("d128 s1024 c",16*16,1024,128,128,128,True),("d128 s4096 c",4*16,4096,128,128,128,True),("d128 s16384 c",16,16384,128,128,128,True),
("d256 s4096 c",4*8,4096,128,64,256,True),("d64 s4096 c",4*32,4096,192,128,64,True),("gqa d128 s4096 c",4*32,4096,128,128,128,True),("d128 s512 c",32*16,512,128,128,128,True)]
for name,bh,seq,BM,BN,D,causal in cases:
    mb=(seq+BM-1)//BM
    hkv = 8 if "gqa" in name else None
    kvb=seq*D*4*(0.25 if hkv else 1)
    for L in (16<<20,32<<20):
        group=int(max(1,min(bh,L//kvb)))
        t=tiles_v7(bh,mb,seq,BM,BN,group,causal)
        ideal=(sum(t)+2*len(t))/G
        print(f"{name:18s} L2={L>>20}MB grp={group:3d} ideal={ideal:7.1f} static={static(t,2)/ideal:.3f} snake={snake(t,2)/ideal:.3f} dyn={dynamic(t,2)/ideal:.3f} lpt={lpt(t,2)/ideal:.3f} v6dyn={dynamic(tiles_v6(bh,mb,seq,BM,BN,causal),2)/ideal:.3f}")
